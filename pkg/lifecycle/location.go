package lifecycle

import (
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

const (
	maxLocationLen    = 1024
	maxS3VersionIDLen = 1024
	maxHostLen        = 253
	maxLabelLen       = 63
)

// locationCheck is the outcome of checking one scriptLocation.
type locationCheck struct {
	s3       bool     // an s3:// location (even an invalid one)
	problem  string   // the error, "" when the location is valid
	warnings []string // non-fatal remarks on a valid location
}

// checkLocation validates a scriptLocation (SPEC §2). strict applies the PCS API's https host
// pattern exactly: a DNS name with a top-level domain of 2–63 letters.
func checkLocation(loc string, strict bool) locationCheck {
	if loc == "" {
		return locationCheck{problem: "must not be empty"}
	}
	if n := utf8.RuneCountInString(loc); n > maxLocationLen {
		return locationCheck{s3: strings.HasPrefix(loc, "s3://"), problem: tooLong(n, maxLocationLen)}
	}
	scheme, rest, hasScheme := strings.Cut(loc, "://")
	switch {
	case scheme == "s3" && hasScheme:
		return locationCheck{s3: true, problem: checkS3(rest)}
	case scheme == "https" && hasScheme:
		return checkHTTPS(loc, rest, strict)
	case !hasScheme:
		return locationCheck{problem: "must be an s3://bucket/key or https:// URL"}
	case strings.EqualFold(scheme, "s3") || strings.EqualFold(scheme, "https"):
		return locationCheck{s3: strings.EqualFold(scheme, "s3"),
			problem: `scheme must be lowercase "` + strings.ToLower(scheme) + `://"`}
	case strings.EqualFold(scheme, "http"):
		return locationCheck{problem: "http:// is not accepted: use https:// or s3://"}
	default:
		return locationCheck{problem: "unsupported scheme " + quote(scheme) + ": must be s3:// or https://"}
	}
}

// checkS3 checks what follows "s3://": bucket/key.
func checkS3(rest string) string {
	if i := strings.IndexFunc(rest, unicode.IsControl); i >= 0 {
		return "must not contain control characters"
	}
	if strings.ContainsAny(rest, "\u2028\u2029") { // line breaks to the API's pattern, too
		return "must not contain a line or paragraph separator (U+2028, U+2029)"
	}
	bucket, key, _ := strings.Cut(rest, "/")
	if !validBucket(bucket) {
		return "invalid bucket name " + quote(bucket) +
			": must be 3 to 63 lowercase letters, digits, '.' and '-', starting and ending with a letter or digit"
	}
	if key == "" {
		return "missing object key: must be s3://bucket/key"
	}
	return ""
}

// validBucket matches [a-z0-9][a-z0-9.-]{1,61}[a-z0-9].
func validBucket(b string) bool {
	if len(b) < 3 || len(b) > 63 {
		return false
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		alnum := c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || i == len(b)-1 || c != '.' && c != '-') {
			return false
		}
	}
	return true
}

// checkHTTPS checks an https:// location; rest follows "https://".
func checkHTTPS(loc, rest string, strict bool) locationCheck {
	if i := strings.IndexFunc(loc, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }); i >= 0 {
		return locationCheck{problem: "must not contain whitespace or control characters"}
	}
	authority := rest
	tail := ""
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority, tail = rest[:i], rest[i:]
	}
	if strings.Contains(authority, "@") {
		return locationCheck{problem: "must not contain user information (user@host)"}
	}
	if authority == "" {
		return locationCheck{problem: "missing host: must be https://host[:port]/path"}
	}
	host, port, ok := splitHostPort(authority)
	if !ok {
		return locationCheck{problem: "invalid host " + quote(authority) + ": an IPv6 address must be in brackets, as https://[::1]/"}
	}
	if port != nil {
		n, err := strconv.Atoi(*port)
		if err != nil || n < 1 || n > 65535 || len(*port) > 5 || strings.IndexFunc(*port, notDigit) >= 0 {
			return locationCheck{problem: "invalid port " + quote(*port) + ": must be 1 to 65535"}
		}
	}
	kind, problem := classifyHost(host)
	if problem != "" {
		return locationCheck{problem: problem}
	}
	if _, err := url.Parse(loc); err != nil {
		msg := err.Error()
		if ue, ok := err.(*url.Error); ok {
			msg = ue.Err.Error()
		}
		return locationCheck{problem: "invalid URL: " + msg}
	}
	var c locationCheck
	if kind != hostPublicDNS {
		why := "has no top-level domain"
		if kind == hostIP {
			why = "is an IP address"
		}
		if strict {
			return locationCheck{problem: "host " + quote(host) + " " + why +
				": the PCS API requires a DNS name with a top-level domain"}
		}
		c.warnings = append(c.warnings, "host "+quote(host)+
			" is accepted here but not by the PCS API (it requires a DNS name with a top-level domain)")
	}
	if looksPresigned(tail) {
		c.warnings = append(c.warnings,
			"looks like a presigned URL: nodes launched after it expires cannot download the script")
	}
	return c
}

func notDigit(r rune) bool { return r < '0' || r > '9' }

// splitHostPort splits an authority into host and optional port. A bracketed IPv6 host keeps
// its brackets. ok is false for an unbracketed host holding several colons.
func splitHostPort(authority string) (host string, port *string, ok bool) {
	if strings.HasPrefix(authority, "[") {
		end := strings.IndexByte(authority, ']')
		if end < 0 {
			return authority, nil, true // classifyHost reports it
		}
		host, after := authority[:end+1], authority[end+1:]
		if after == "" {
			return host, nil, true
		}
		if !strings.HasPrefix(after, ":") {
			return authority, nil, true
		}
		p := after[1:]
		return host, &p, true
	}
	switch strings.Count(authority, ":") {
	case 0:
		return authority, nil, true
	case 1:
		h, p, _ := strings.Cut(authority, ":")
		return h, &p, true
	default:
		return authority, nil, false
	}
}

type hostKind int

const (
	hostPublicDNS hostKind = iota // a DNS name ending in a top-level domain: the API's pattern
	hostLocalDNS                  // a DNS name without a top-level domain, such as localhost
	hostIP                        // an IPv4 or bracketed IPv6 literal
)

// classifyHost validates host (brackets kept for IPv6) and says which kind it is.
func classifyHost(host string) (hostKind, string) {
	if host == "" {
		return 0, "missing host: must be https://host[:port]/path"
	}
	if strings.HasPrefix(host, "[") {
		inner, ok := strings.CutSuffix(host[1:], "]")
		if !ok {
			return 0, "invalid host " + quote(host) + ": not a bracketed IPv6 address"
		}
		addr, err := netip.ParseAddr(inner)
		if err != nil || !addr.Is6() || addr.Zone() != "" {
			return 0, "invalid host " + quote(host) + ": not an IPv6 address (zones are not accepted)"
		}
		return hostIP, ""
	}
	if len(host) > maxHostLen {
		return 0, "invalid host: " + tooLong(len(host), maxHostLen)
	}
	labels := strings.Split(host, ".")
	last := labels[len(labels)-1]
	if last != "" && strings.IndexFunc(last, notDigit) < 0 { // all digits: meant as IPv4
		addr, err := netip.ParseAddr(host)
		if err != nil || !addr.Is4() {
			return 0, "invalid host " + quote(host) + ": not an IPv4 address"
		}
		return hostIP, ""
	}
	for _, l := range labels {
		if !validLabel(l) {
			return 0, "invalid host " + quote(host) +
				": each dot-separated label must be 1 to 63 letters, digits, '-' and '_', " +
				"starting and ending with a letter or digit (use the xn-- form of an international name)"
		}
	}
	if len(labels) >= 2 && isTLD(last) {
		return hostPublicDNS, ""
	}
	return hostLocalDNS, ""
}

// validLabel matches [A-Za-z0-9]([A-Za-z0-9_-]{0,61}[A-Za-z0-9])?.
func validLabel(l string) bool {
	if l == "" || len(l) > maxLabelLen {
		return false
	}
	for i := 0; i < len(l); i++ {
		c := l[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || i == len(l)-1 || c != '-' && c != '_') {
			return false
		}
	}
	return true
}

// isTLD matches [a-zA-Z]{2,63}.
func isTLD(l string) bool {
	if len(l) < 2 || len(l) > 63 {
		return false
	}
	for i := 0; i < len(l); i++ {
		if c := l[i] | 0x20; c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}

// looksPresigned reports whether the part of a URL after the host carries a query signature
// that expires: AWS Signature Version 4 (X-Amz-Signature, X-Amz-Expires) or the Signature and
// Expires pair of version 2 and of CloudFront signed URLs.
func looksPresigned(tail string) bool {
	tail, _, _ = strings.Cut(tail, "#")
	_, query, ok := strings.Cut(tail, "?")
	if !ok {
		return false
	}
	var sig, exp bool
	for _, kv := range strings.Split(query, "&") {
		k, _, _ := strings.Cut(kv, "=")
		if u, err := url.QueryUnescape(k); err == nil {
			k = u
		}
		switch strings.ToLower(k) {
		case "x-amz-signature", "x-amz-expires":
			return true
		case "signature":
			sig = true
		case "expires":
			exp = true
		}
	}
	return sig && exp
}

// quote renders s for a message, shortened when long.
func quote(s string) string {
	const maxRunes = 64
	if utf8.RuneCountInString(s) > maxRunes {
		r := []rune(s)
		return strconv.Quote(string(r[:maxRunes])) + "…"
	}
	return strconv.Quote(s)
}
