package lifecycle

import (
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Agreement with the public API model (the botocore service model of PCS): the validator, in
// the API-strict mode, accepts exactly what the model's nodeLifecycleActions shapes accept,
// except where docs/decisions.md says why not. TestAPIModel (build tag apimodel, run by .ci/run
// with PCS_API_MODEL pointing at the model) generates the cases from the model itself; the
// cases here are hand-written copies of those that matter, run by make test, with the model's
// verdict written down (TestAPIModel checks that each is still the model's verdict).

// apiCase is one document: the base document with one value replaced or removed.
type apiCase struct {
	name  string
	path  []any // keys and indexes from the document root
	value any   // the new value; del removes the member instead
	del   bool
	model bool // whether the API model accepts the document
}

// modelExceptions are the documented differences: a key phrase of docs/decisions.md for each,
// and whether a case falls under it. A case the validator and the model judge differently
// must fall under one.
var modelExceptions = []struct {
	decision string // appears in docs/decisions.md
	applies  func(c apiCase, doc map[string]any) bool
}{
	{"`\"stages\": {}`", func(c apiCase, doc map[string]any) bool {
		st, _ := doc["stages"].(map[string]any)
		return st != nil && len(st) == 0
	}},
	{"control characters", func(c apiCase, _ map[string]any) bool { return hasControl(c.value) }},
	{"port outside 1–65535", func(c apiCase, _ map[string]any) bool {
		s, _ := c.value.(string)
		return strings.HasPrefix(s, "https://") && (strings.Contains(s, ":0/") || strings.Contains(s, ":99999"))
	}},
	{"`%`-escape", func(c apiCase, _ map[string]any) bool {
		s, _ := c.value.(string)
		_, err := url.PathUnescape(s)
		return strings.HasPrefix(s, "https://") && err != nil
	}},
	{"253 characters", func(c apiCase, _ map[string]any) bool {
		s, _ := c.value.(string)
		host, _, _ := strings.Cut(strings.TrimPrefix(s, "https://"), "/")
		return strings.HasPrefix(s, "https://") && len(host) > 253
	}},
	{"`s3VersionId` beside an `https://`", func(c apiCase, doc map[string]any) bool {
		for _, st := range []string{"nodeBootstrapped", "nodeReady"} {
			list, _ := doc["stages"].(map[string]any)[st].([]any)
			for _, s := range list {
				src, _ := s.(map[string]any)["scriptSource"].(map[string]any)
				loc, _ := src["scriptLocation"].(string)
				if v, ok := src["s3VersionId"].(string); ok && v != "" && strings.HasPrefix(loc, "https://") {
					return true
				}
			}
		}
		return false
	}},
}

func hasControl(v any) bool {
	switch v := v.(type) {
	case string:
		return strings.ContainsFunc(v, unicode.IsControl)
	case []any:
		for _, x := range v {
			if hasControl(x) {
				return true
			}
		}
	case map[string]any:
		for _, x := range v {
			if hasControl(x) {
				return true
			}
		}
	}
	return false
}

// exceptionFor is the documented difference a case falls under ("" for none).
func exceptionFor(c apiCase, doc map[string]any) string {
	for _, e := range modelExceptions {
		if e.applies(c, doc) {
			return e.decision
		}
	}
	return ""
}

// baseScript is a script with every member, valid for the model and the validator.
func baseScript(name string) map[string]any {
	return map[string]any{
		"name": name,
		"scriptSource": map[string]any{
			"scriptLocation": "s3://bucket-01/lifecycle/setup.sh",
			"checksum":       "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
			"s3VersionId":    "3HL4kqtJlcpXroDTDmJ",
		},
		"arguments":       []any{"--mount", "/fsx"},
		"executionPolicy": "EVERY_BOOT",
		"onError":         "CONTINUE",
	}
}

// baseDocument has every member of every shape once (the first nodeBootstrapped script, which
// the generated cases change, has no s3VersionId: an https location is valid there).
func baseDocument() map[string]any {
	boot := baseScript("boot-0")
	delete(boot["scriptSource"].(map[string]any), "s3VersionId")
	return map[string]any{
		"scriptCachingPolicy": "CACHE_ONCE",
		"stages": map[string]any{
			"nodeBootstrapped": []any{boot},
			"nodeReady":        []any{baseScript("ready-0")},
		},
	}
}

// scripts is n scripts with distinct names (the model has no uniqueness rule; ours is kept
// out of these cases).
func scripts(n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = baseScript("s" + strings.Repeat("x", i%3) + string(rune('a'+i%26)) + string(rune('a'+i/26)))
	}
	return out
}

// build is the base document with the case applied.
func (c apiCase) build() map[string]any {
	doc := baseDocument()
	var parent any = doc
	for i, step := range c.path {
		last := i == len(c.path)-1
		switch p := parent.(type) {
		case map[string]any:
			k := step.(string)
			if last {
				if c.del {
					delete(p, k)
				} else {
					p[k] = c.value
				}
				return doc
			}
			parent = p[k]
		case []any:
			j := step.(int)
			if last {
				p[j] = c.value
				return doc
			}
			parent = p[j]
		}
	}
	return doc
}

// p0 paths into the first nodeReady script.
func scriptPath(rest ...any) []any { return append([]any{"stages", "nodeReady", 0}, rest...) }
func sourcePath(k string) []any    { return scriptPath("scriptSource", k) }

// handCases are the cases that matter, with the model's verdict.
var handCases = []apiCase{
	{name: "the base document", path: []any{"scriptCachingPolicy"}, value: "CACHE_ONCE", model: true},
	{name: "stages required", path: []any{"stages"}, del: true, model: false},
	{name: "stages empty", path: []any{"stages"}, value: map[string]any{}, model: true},
	{name: "scriptCachingPolicy optional", path: []any{"scriptCachingPolicy"}, del: true, model: true},
	{name: "scriptCachingPolicy REFRESH_ON_REBOOT", path: []any{"scriptCachingPolicy"}, value: "REFRESH_ON_REBOOT", model: true},
	{name: "scriptCachingPolicy lowercase", path: []any{"scriptCachingPolicy"}, value: "cache_once", model: false},
	{name: "an unknown member", path: []any{"version"}, value: "1", model: false},
	{name: "no scripts in a stage", path: []any{"stages", "nodeReady"}, value: []any{}, model: false},
	{name: "20 scripts", path: []any{"stages", "nodeReady"}, value: scripts(20), model: true},
	{name: "21 scripts", path: []any{"stages", "nodeReady"}, value: scripts(21), model: false},
	{name: "name required", path: scriptPath("name"), del: true, model: false},
	{name: "name empty", path: scriptPath("name"), value: "", model: false},
	{name: "name of 64", path: scriptPath("name"), value: strings.Repeat("n", 64), model: true},
	{name: "name of 65", path: scriptPath("name"), value: strings.Repeat("n", 65), model: false},
	{name: "name with space, '_' and '-'", path: scriptPath("name"), value: "0 a_b-C", model: true},
	{name: "name starting with '-'", path: scriptPath("name"), value: "-a", model: false},
	{name: "name with '.'", path: scriptPath("name"), value: "setup.sh", model: false},
	{name: "scriptSource required", path: scriptPath("scriptSource"), del: true, model: false},
	{name: "scriptLocation required", path: sourcePath("scriptLocation"), del: true, model: false},
	{name: "location of 1024", path: sourcePath("scriptLocation"), value: "s3://bucket-01/" + strings.Repeat("k", 1024-15), model: true},
	{name: "location of 1025", path: sourcePath("scriptLocation"), value: "s3://bucket-01/" + strings.Repeat("k", 1025-15), model: false},
	{name: "s3 key with spaces", path: sourcePath("scriptLocation"), value: "s3://bucket-01/path with spaces/a.sh", model: true},
	{name: "s3 bucket of 2", path: sourcePath("scriptLocation"), value: "s3://bu/a.sh", model: false},
	{name: "s3 bucket uppercase", path: sourcePath("scriptLocation"), value: "s3://Bucket/a.sh", model: false},
	{name: "s3 without a key", path: sourcePath("scriptLocation"), value: "s3://bucket-01/", model: false},
	{name: "s3 key with a tab", path: sourcePath("scriptLocation"), value: "s3://bucket-01/a\tb.sh", model: true},
	{name: "https", path: sourcePath("scriptLocation"), value: "https://scripts.example.com/pcs/a.sh?ref=main#x", model: true},
	{name: "https without a path", path: sourcePath("scriptLocation"), value: "https://scripts.example.com", model: true},
	{name: "https with a port", path: sourcePath("scriptLocation"), value: "https://scripts.example.com:8443/a.sh", model: true},
	{name: "https port 0", path: sourcePath("scriptLocation"), value: "https://scripts.example.com:0/a.sh", model: true},
	{name: "https port 99999", path: sourcePath("scriptLocation"), value: "https://scripts.example.com:99999/a.sh", model: true},
	{name: "https IP host", path: sourcePath("scriptLocation"), value: "https://10.0.0.5/a.sh", model: false},
	{name: "https localhost", path: sourcePath("scriptLocation"), value: "https://localhost/a.sh", model: false},
	{name: "https user information", path: sourcePath("scriptLocation"), value: "https://user@scripts.example.com/a.sh", model: false},
	{name: "https with a space", path: sourcePath("scriptLocation"), value: "https://scripts.example.com/a b.sh", model: false},
	{name: "https with a no-break space", path: sourcePath("scriptLocation"), value: "https://scripts.example.com/a\u00a0b.sh", model: false},
	{name: "https bad escape", path: sourcePath("scriptLocation"), value: "https://scripts.example.com/a%zz.sh", model: true},
	{name: "http", path: sourcePath("scriptLocation"), value: "http://scripts.example.com/a.sh", model: false},
	{name: "uppercase scheme", path: sourcePath("scriptLocation"), value: "HTTPS://scripts.example.com/a.sh", model: false},
	{name: "checksum optional", path: sourcePath("checksum"), del: true, model: true},
	{name: "checksum uppercase", path: sourcePath("checksum"), value: strings.ToUpper("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"), model: true},
	{name: "checksum of 63", path: sourcePath("checksum"), value: strings.Repeat("a", 63), model: false},
	{name: "checksum of 65", path: sourcePath("checksum"), value: strings.Repeat("a", 65), model: false},
	{name: "checksum not hex", path: sourcePath("checksum"), value: strings.Repeat("g", 64), model: false},
	{name: "checksum empty", path: sourcePath("checksum"), value: "", model: false},
	{name: "s3VersionId empty", path: sourcePath("s3VersionId"), value: "", model: true},
	{name: "s3VersionId of 1024", path: sourcePath("s3VersionId"), value: strings.Repeat("v", 1024), model: true},
	{name: "s3VersionId of 1025", path: sourcePath("s3VersionId"), value: strings.Repeat("v", 1025), model: false},
	{name: "arguments optional", path: scriptPath("arguments"), del: true, model: true},
	{name: "no arguments", path: scriptPath("arguments"), value: []any{}, model: true},
	{name: "20 arguments", path: scriptPath("arguments"), value: strs(20, "a"), model: true},
	{name: "21 arguments", path: scriptPath("arguments"), value: strs(21, "a"), model: false},
	{name: "argument of 256", path: scriptPath("arguments"), value: []any{strings.Repeat("é", 256)}, model: true},
	{name: "argument of 257", path: scriptPath("arguments"), value: []any{strings.Repeat("a", 257)}, model: false},
	{name: "empty argument", path: scriptPath("arguments"), value: []any{""}, model: true},
	{name: "argument with NUL", path: scriptPath("arguments"), value: []any{"a\x00b"}, model: true},
	{name: "executionPolicy FIRST_BOOT_ONLY", path: scriptPath("executionPolicy"), value: "FIRST_BOOT_ONLY", model: true},
	{name: "executionPolicy unknown", path: scriptPath("executionPolicy"), value: "ALWAYS", model: false},
	{name: "onError each", path: scriptPath("onError"), value: "STOP_SEQUENCE", model: true},
	{name: "onError unknown", path: scriptPath("onError"), value: "STOP", model: false},
	{name: "a number for a string", path: scriptPath("onError"), value: 1, model: false},
}

// withHTTPS is a case on a document whose first nodeReady script is at an https location.
var s3VersionIDWithHTTPS = apiCase{name: "s3VersionId with an https location", path: scriptPath("scriptSource"),
	value: map[string]any{"scriptLocation": "https://scripts.example.com/a.sh", "s3VersionId": "v1"}, model: true}

func strs(n int, s string) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = s
	}
	return out
}

func allHandCases() []apiCase { return append(append([]apiCase{}, handCases...), s3VersionIDWithHTTPS) }

// accepts is the validator's verdict (API-strict) on a document.
func accepts(t *testing.T, doc map[string]any) (bool, string) {
	t.Helper()
	data, err := json.Marshal(doc)
	require.NoError(t, err)
	_, _, perr := Parse(data, Options{APIStrict: true})
	if perr != nil {
		return false, perr.Error()
	}
	return true, ""
}

// checkAgreement requires the validator to judge c as the model does, or the difference to be
// documented.
func checkAgreement(t *testing.T, c apiCase, model bool) {
	t.Helper()
	doc := c.build()
	ours, why := accepts(t, doc)
	if ours == model {
		return
	}
	if exc := exceptionFor(c, doc); exc != "" {
		t.Logf("%s: model %v, validator %v: documented (%s)", c.name, model, ours, exc)
		return
	}
	t.Errorf("%s: the API model accepts it: %v; the validator: %v %s\n%v", c.name, model, ours, why, doc)
}

// TestAPIModelCases runs the hand-written copies of the model's cases.
func TestAPIModelCases(t *testing.T) {
	for _, c := range allHandCases() {
		t.Run(c.name, func(t *testing.T) { checkAgreement(t, c, c.model) })
	}
}

// TestAPIModelExceptionsDocumented: every documented difference is in docs/decisions.md.
func TestAPIModelExceptionsDocumented(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "decisions.md"))
	require.NoError(t, err)
	for _, e := range modelExceptions {
		assert.Contains(t, string(data), e.decision)
	}
}
