package source

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"syscall"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// Kind classifies a download failure.
type Kind int

const (
	// Other is any failure not listed below (an unexpected status, a refused redirect, an SDK
	// configuration error such as missing credentials or region).
	Other Kind = iota
	// NotFound: S3 NoSuchKey, NoSuchBucket or NoSuchVersion, or HTTP 404.
	NotFound
	// Forbidden: HTTP 401/403, S3 AccessDenied, InvalidAccessKeyId, SignatureDoesNotMatch (and
	// versitygw's XAdminUserNotFound, its 404 for an unknown access key).
	Forbidden
	// TooLarge: the object is larger than the size cap.
	TooLarge
	// ChecksumMismatch: the downloaded bytes do not have the expected SHA-256.
	ChecksumMismatch
	// Untrusted: the server's TLS certificate failed verification.
	Untrusted
	// Network: connecting, TLS handshake, a timeout, a connection cut short or a body shorter
	// than its Content-Length.
	Network
	// Server: HTTP 5xx.
	Server
	// Invalid: the location or checksum cannot be used at all (not s3:// or https://, no
	// bucket or key, a checksum that is not 64 hex characters). Never retried.
	Invalid
	// Canceled: the caller's context ended (canceled or its deadline passed) during an attempt
	// or a wait. Never retried; errors.Is(err, context.Canceled) works.
	Canceled
)

var kindNames = map[Kind]string{
	Other:            "other",
	NotFound:         "not-found",
	Forbidden:        "forbidden",
	TooLarge:         "too-large",
	ChecksumMismatch: "checksum-mismatch",
	Untrusted:        "untrusted",
	Network:          "network",
	Server:           "server",
	Invalid:          "invalid",
	Canceled:         "canceled",
}

// String is a short stable name for logs ("not-found", "checksum-mismatch", …).
func (k Kind) String() string {
	if s, ok := kindNames[k]; ok {
		return s
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Error is a failed download.
type Error struct {
	Location   string // the scriptLocation or document location
	Kind       Kind
	Attempts   int   // how many attempts were made (0: none, the location was invalid)
	StatusCode int   // the HTTP status of the last response, when there was one
	Err        error // the last attempt's cause
	// S3 only: what was asked, for a message that says what the role needs.
	Bucket, Key string
	VersionID   string // the s3VersionId pinned, if any
	Owner       string // --expected-bucket-owner, if given
}

// Error is one line an administrator can act on, like
// "download s3://b/k: not found (404): no object with this key in bucket b (no s3VersionId
// pinned: the latest version) after 3 attempts". The SDK's own text (request IDs, "https
// response error" whatever the endpoint's scheme) is left to Debug.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("download ")
	b.WriteString(e.Location)
	b.WriteString(": ")
	b.WriteString(e.describe())
	switch {
	case e.Attempts == 1:
		b.WriteString(" after 1 attempt")
	case e.Attempts > 1:
		fmt.Fprintf(&b, " after %d attempts", e.Attempts)
	}
	d := e.why()
	if d == "" {
		d = e.detail()
	}
	if d != "" {
		b.WriteString(": ")
		b.WriteString(d)
	}
	return b.String()
}

// Debug is Error with the last attempt's whole cause as the SDK or net/http gave it (request
// and host IDs included), for DEBUG logging.
func (e *Error) Debug() string {
	if e.Err == nil {
		return e.Error()
	}
	return e.Error() + " [" + e.Err.Error() + "]"
}

// apiCode is the S3 error code of the cause ("NoSuchKey", "AccessDenied", …), or "".
func (e *Error) apiCode() string {
	var apiErr smithy.APIError
	if errors.As(e.Err, &apiErr) {
		return apiErr.ErrorCode()
	}
	return ""
}

func (e *Error) describe() string {
	switch e.Kind {
	case NotFound:
		return "not found (" + e.statusOr(404) + ")"
	case Forbidden:
		return "access denied (" + e.statusOr(403) + ")"
	case TooLarge:
		return "too large"
	case ChecksumMismatch:
		return "checksum mismatch"
	case Untrusted:
		return "server certificate is not trusted (add its CA to the system trust store, or point SSL_CERT_FILE at a PEM bundle that holds it)"
	case Network:
		return networkWhy(e.Err)
	case Server:
		if e.StatusCode != 0 {
			return fmt.Sprintf("server error (%d)", e.StatusCode)
		}
		return "server error"
	case Invalid:
		return "invalid location"
	case Canceled:
		return "canceled"
	default:
		if e.StatusCode != 0 {
			return fmt.Sprintf("failed (HTTP %d)", e.StatusCode)
		}
		return "failed"
	}
}

// why says what to fix for an S3 not found or access denied, with S3's error code; "" for
// anything else (detail then says what happened).
func (e *Error) why() string {
	if e.Bucket == "" {
		return ""
	}
	w := ""
	switch e.Kind {
	case NotFound:
		w = e.notFoundWhy()
	case Forbidden:
		w = e.forbiddenWhy()
	default:
		return ""
	}
	if code := e.apiCode(); code != "" {
		w = code + ": " + w
	}
	return w
}

func (e *Error) pinned() string {
	if e.VersionID != "" {
		return "s3VersionId " + e.VersionID + " pinned"
	}
	return "no s3VersionId pinned: the latest version"
}

func (e *Error) notFoundWhy() string {
	if e.Bucket == "" {
		return ""
	}
	switch e.apiCode() {
	case "NoSuchBucket":
		return "bucket " + e.Bucket + " does not exist"
	case "NoSuchVersion":
		return "the object has no version " + e.VersionID + " (s3VersionId)"
	}
	return "no object with this key in bucket " + e.Bucket + " (" + e.pinned() + ")"
}

// credentialCodes are S3's answers about the credentials themselves, not their permissions.
var credentialCodes = map[string]bool{"InvalidAccessKeyId": true, "SignatureDoesNotMatch": true,
	"InvalidToken": true, "ExpiredToken": true, "XAdminUserNotFound": true}

// forbiddenWhy says what to fix: the credentials, or the IAM actions the instance role needs
// on this object (and the bucket's owner when --expected-bucket-owner was given).
func (e *Error) forbiddenWhy() string {
	if credentialCodes[e.apiCode()] {
		return "the credentials were refused (unknown access key, wrong secret or expired token)"
	}
	arn := "arn:aws:s3:::" + e.Bucket + "/" + e.Key
	var b strings.Builder
	if e.VersionID != "" {
		b.WriteString("the instance role needs s3:GetObject and s3:GetObjectVersion on " + arn + " (s3VersionId pinned)")
	} else {
		b.WriteString("the instance role needs s3:GetObject on " + arn)
	}
	if e.Owner != "" {
		b.WriteString(", and the bucket must belong to account " + e.Owner + " (--expected-bucket-owner)")
	}
	b.WriteString("; without s3:ListBucket on arn:aws:s3:::" + e.Bucket + ", S3 also answers 403 for a key that does not exist")
	return b.String()
}

// networkWhy names a network failure: DNS, a TLS handshake, a refused connection, a timeout.
func networkWhy(err error) string {
	var (
		dns   *net.DNSError
		alert tls.AlertError
		rec   tls.RecordHeaderError
		op    *net.OpError
	)
	switch {
	case errors.As(err, &dns):
		return "DNS lookup of " + dns.Name + " failed"
	case errors.As(err, &rec), strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		return "TLS handshake failed (the server did not answer in TLS: is it plain http?)"
	case errors.As(err, &alert), isTLSHandshake(err):
		return "TLS handshake failed"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &op) && op.Timeout():
		return "network timeout"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "network error: connection cut short"
	}
	return "network error"
}

func isTLSHandshake(err error) bool {
	for ; err != nil; err = errors.Unwrap(err) {
		if strings.HasPrefix(err.Error(), "tls: ") {
			return true
		}
	}
	return false
}

// detail is the cause without the SDK's wrapping (which names request IDs and says "https
// response error" whatever the endpoint's scheme): the S3 error code and message, or the
// innermost error.
func (e *Error) detail() string {
	if e.Err == nil {
		return ""
	}
	oe, ok := e.Err.(*smithy.OperationError)
	if !ok {
		// A network failure of an https:// download: the innermost error, without net/http's
		// `Get "URL": ` (the URL is the line's own).
		var (
			dns *net.DNSError
			op  *net.OpError
		)
		switch {
		case e.Kind != Network:
		case errors.As(e.Err, &dns):
			return dns.Error()
		case errors.As(e.Err, &op):
			return op.Error()
		}
		return e.Err.Error()
	}
	var apiErr smithy.APIError
	if errors.As(oe, &apiErr) {
		msg := apiErr.ErrorCode()
		if m := apiErr.ErrorMessage(); m != "" {
			msg += ": " + m
		}
		return msg
	}
	var (
		dns *net.DNSError
		op  *net.OpError
		ue  *url.Error
	)
	switch {
	case errors.As(oe, &dns):
		return dns.Error()
	case errors.As(oe, &op):
		return op.Error()
	case errors.As(oe, &ue):
		return ue.Error()
	}
	err := oe.Err
	for err != nil {
		switch err.(type) {
		case *awshttp.ResponseError, *smithyhttp.ResponseError, *smithyhttp.RequestSendError, *retry.MaxAttemptsError:
			if inner := errors.Unwrap(err); inner != nil {
				err = inner
				continue
			}
			return "" // a status without an error document: the status says it all
		}
		return err.Error()
	}
	return ""
}

func (e *Error) statusOr(code int) string {
	if e.StatusCode != 0 {
		code = e.StatusCode
	}
	return strconv.Itoa(code)
}

func (e *Error) Unwrap() error { return e.Err }

// KindOf returns the Kind of a download error, Other for any other non-nil error.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return Other
}

func newError(location string, kind Kind, status int, err error) *Error {
	return &Error{Location: location, Kind: kind, StatusCode: status, Err: err}
}

// kindOfStatus maps an HTTP status code to a Kind.
func kindOfStatus(code int) Kind {
	switch {
	case code == 404:
		return NotFound
	case code == 401 || code == 403:
		return Forbidden
	case code >= 500 && code <= 599:
		return Server
	default:
		return Other
	}
}

// classify turns a transport or SDK error into a Kind and, when known, an HTTP status code.
// ctx is the caller's context: when it is done, the failure is Canceled whatever the cause.
func classify(ctx context.Context, err error) (Kind, int) {
	if ctx.Err() != nil {
		return Canceled, 0
	}
	status := 0
	var re interface{ HTTPStatusCode() int }
	var smithyResp *smithyhttp.ResponseError
	if errors.As(err, &smithyResp) {
		status = smithyResp.HTTPStatusCode()
	} else if errors.As(err, &re) {
		status = re.HTTPStatusCode()
	}

	var (
		noKey     *types.NoSuchKey
		noBucket  *types.NoSuchBucket
		notFound  *types.NotFound
		apiErr    smithy.APIError
		unknownCA x509.UnknownAuthorityError
		invalid   x509.CertificateInvalidError
		hostname  x509.HostnameError
		verify    *tls.CertificateVerificationError
		sysRoots  x509.SystemRootsError
		netErr    net.Error
		opErr     *net.OpError
	)
	switch {
	case errors.As(err, &noKey), errors.As(err, &noBucket), errors.As(err, &notFound):
		return NotFound, status
	case errors.As(err, &verify), errors.As(err, &unknownCA), errors.As(err, &invalid),
		errors.As(err, &hostname), errors.As(err, &sysRoots):
		return Untrusted, status
	}
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode() {
		case "NoSuchKey", "NoSuchBucket", "NoSuchVersion", "NotFound":
			return NotFound, status
		case "AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "AllAccessDisabled",
			"InvalidToken", "ExpiredToken",
			// versitygw's answer (HTTP 404) to an access key it does not know.
			"XAdminUserNotFound":
			return Forbidden, status
		}
	}
	if status != 0 {
		return kindOfStatus(status), status
	}
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, context.DeadlineExceeded),
		errors.As(err, &netErr), errors.As(err, &opErr):
		return Network, 0
	}
	return Other, 0
}

// s3Failure is failure for a GetObject, with what was asked (bucket, key, version, owner) so
// that the message can say what the instance role needs.
func s3Failure(ctx context.Context, loc string, err error, obj *s3Location, versionID, owner string) *Error {
	e := failure(ctx, loc, err)
	e.Bucket, e.Key, e.VersionID, e.Owner = obj.bucket, obj.key, versionID, owner
	return e
}
