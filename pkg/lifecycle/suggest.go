package lifecycle

import (
	"strings"
	"unicode/utf8"
)

// level describes the keys one JSON object of the document may hold, and the hints given for
// keys it may not.
type level struct {
	known []string
	// hints maps a normalised unknown key to the text appended to "unknown field": a common
	// alias, or the level a misplaced field belongs to.
	hints map[string]string
}

var (
	wrapperKey = "nodeLifecycleActions"
	groupKey   = "computeNodeGroup"

	actionsLevel = level{
		known: []string{"scriptCachingPolicy", "stages"},
		hints: map[string]string{
			"nodebootstrapped": "(it belongs inside stages)",
			"nodeready":        "(it belongs inside stages)",
			"nodelifecycleactions": `(did you mean "nodeLifecycleActions"? a CloudFormation template's PascalCase ` +
				`properties are converted by "pcs-lifecycle convert cloudformation")`,
			"resources": `(this looks like a CloudFormation template: "pcs-lifecycle convert cloudformation" ` +
				`writes its node lifecycle actions as a document)`,
			"awstemplateformatversion": `(this looks like a CloudFormation template: "pcs-lifecycle convert ` +
				`cloudformation" writes its node lifecycle actions as a document)`,
			"cachingpolicy": `(did you mean "scriptCachingPolicy"?)`,
			"cachepolicy":   `(did you mean "scriptCachingPolicy"?)`,
		},
	}
	stagesLevel = level{
		known: []string{StageNodeBootstrapped, StageNodeReady},
		hints: map[string]string{
			"bootstrapped": `(did you mean "nodeBootstrapped"?)`,
			"ready":        `(did you mean "nodeReady"?)`,
		},
	}
	scriptLevel = level{
		known: []string{"name", "scriptSource", "arguments", "executionPolicy", "onError"},
		hints: map[string]string{
			"scriptlocation": "(it belongs inside scriptSource)",
			"checksum":       "(it belongs inside scriptSource)",
			"s3versionid":    "(it belongs inside scriptSource)",
			"args":           `(did you mean "arguments"?)`,
			"argv":           `(did you mean "arguments"?)`,
			"params":         `(did you mean "arguments"?)`,
			"parameters":     `(did you mean "arguments"?)`,
			"source":         `(did you mean "scriptSource"?)`,
			"script":         `(did you mean "scriptSource"?)`,
			"location":       `(it belongs inside scriptSource as "scriptLocation")`,
			"url":            `(it belongs inside scriptSource as "scriptLocation")`,
			"uri":            `(it belongs inside scriptSource as "scriptLocation")`,
			"policy":         `(did you mean "executionPolicy"?)`,
			"scriptcachingpolicy": "(it belongs at the top level of the document, " +
				"for all scripts)",
		},
	}
	sourceLevel = level{
		known: []string{"scriptLocation", "checksum", "s3VersionId"},
		hints: map[string]string{
			"url":       `(did you mean "scriptLocation"?)`,
			"uri":       `(did you mean "scriptLocation"?)`,
			"sha256":    `(did you mean "checksum"?)`,
			"sha256sum": `(did you mean "checksum"?)`,
			"digest":    `(did you mean "checksum"?)`,
			"hash":      `(did you mean "checksum"?)`,
			"versionid": `(did you mean "s3VersionId"?)`,
			"version":   `(did you mean "s3VersionId"?)`,
		},
	}
)

// isKnown reports whether key is one of the level's field names, exactly.
func (l level) isKnown(key string) bool {
	for _, k := range l.known {
		if k == key {
			return true
		}
	}
	return false
}

// unknownFieldMessage is the message for a key the level does not hold, with a hint when one
// is close enough to be useful.
func (l level) unknownFieldMessage(key string) string {
	if hint := l.hint(key); hint != "" {
		return "unknown field " + hint
	}
	return "unknown field"
}

// maxSuggestLen bounds the keys compared by edit distance (quadratic in the length).
const maxSuggestLen = 64

func (l level) hint(key string) string {
	if utf8.RuneCountInString(key) > maxSuggestLen {
		return ""
	}
	nk := normaliseKey(key)
	if nk == "" {
		return ""
	}
	// An exact match but for case, '_', '-' and spaces wins.
	for _, k := range l.known {
		if normaliseKey(k) == nk {
			return `(did you mean "` + k + `"?)`
		}
	}
	if h, ok := l.hints[nk]; ok {
		return h
	}
	best, bestDist := "", -1
	for _, k := range l.known {
		d := editDistance(nk, normaliseKey(k))
		if d > 2 && 3*d > utf8.RuneCountInString(k) { // within 2 edits or a third of the name
			continue
		}
		if bestDist < 0 || d < bestDist {
			best, bestDist = k, d
		}
	}
	if best == "" && utf8.RuneCountInString(nk) >= 4 {
		for _, k := range l.known { // "source" for "scriptSource", "cachingPolicy", …
			if nkk := normaliseKey(k); strings.Contains(nkk, nk) || strings.Contains(nk, nkk) {
				best = k
				break
			}
		}
	}
	if best == "" {
		return ""
	}
	return `(did you mean "` + best + `"?)`
}

// normaliseKey lowercases key and drops '_', '-' and spaces, so "Script_Location" compares equal
// to "scriptLocation".
func normaliseKey(key string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(key) {
		if r == '_' || r == '-' || r == ' ' {
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// editDistance is the Levenshtein distance between a and b, in runes.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// Form is the shape in which a configuration document was found.
type Form string

const (
	// FormDocument is the bare object, as given to `aws pcs create-compute-node-group
	// --node-lifecycle-actions`.
	FormDocument Form = "document"
	// FormWrapped is {"nodeLifecycleActions": {...}}.
	FormWrapped Form = "nodeLifecycleActions"
	// FormComputeNodeGroup is the output of `aws pcs get-compute-node-group`:
	// {"computeNodeGroup": {..., "nodeLifecycleActions": {...}}}.
	FormComputeNodeGroup Form = "computeNodeGroup"
)

// Describe says in words which form this is, for messages.
func (f Form) Describe() string {
	switch f {
	case FormDocument:
		return "a nodeLifecycleActions document (as given to aws pcs create-compute-node-group --node-lifecycle-actions)"
	case FormWrapped:
		return `a document wrapped as {"nodeLifecycleActions": {...}}`
	case FormComputeNodeGroup:
		return "the output of aws pcs get-compute-node-group (its nodeLifecycleActions; the other fields ignored)"
	}
	return "not a JSON object"
}

// valueAliases maps a normalised wrong value to the allowed value it most likely means.
var valueAliases = map[string]string{
	"stop":      string(StopSequence),
	"halt":      string(StopSequence),
	"skip":      string(StopSequence),
	"ignore":    string(Continue),
	"proceed":   string(Continue),
	"abort":     string(Terminate),
	"fail":      string(Terminate),
	"exit":      string(Terminate),
	"kill":      string(Terminate),
	"always":    string(EveryBoot),
	"everytime": string(EveryBoot),
	"eachboot":  string(EveryBoot),
	"once":      string(FirstBootOnly),
	"firstboot": string(FirstBootOnly),
	"refresh":   string(RefreshOnReboot),
	"cache":     string(CacheOnce),
	"cached":    string(CacheOnce),
}

// suggestValue finds the allowed value a wrong enumerated value most likely means: the same
// but for case, '_', '-' and spaces (caseOnly), else an alias ("STOP" → STOP_SEQUENCE, when
// allowed), a close spelling, or the one allowed value that contains it or that it contains.
// It returns "" when nothing is close enough.
func suggestValue(v string, allowed []string) (best string, caseOnly bool) {
	nv := normaliseKey(v)
	if nv == "" {
		return "", false
	}
	for _, a := range allowed {
		if normaliseKey(a) == nv {
			return a, true
		}
	}
	if a, ok := valueAliases[nv]; ok {
		for _, x := range allowed {
			if x == a {
				return a, false
			}
		}
	}
	bestDist := -1
	for _, a := range allowed {
		na := normaliseKey(a)
		d := editDistance(nv, na)
		if d > 2 && 3*d > len(na) {
			continue
		}
		if bestDist < 0 || d < bestDist {
			best, bestDist = a, d
		}
	}
	if best != "" {
		return best, false
	}
	if len(nv) < 3 {
		return "", false
	}
	var hits []string
	for _, a := range allowed {
		if na := normaliseKey(a); strings.Contains(na, nv) || strings.Contains(nv, na) {
			hits = append(hits, a)
		}
	}
	if len(hits) == 1 {
		return hits[0], false
	}
	return "", false
}
