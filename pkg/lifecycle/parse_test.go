package lifecycle

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	hex64    = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	okSource = `"scriptSource":{"scriptLocation":"s3://bucket/key.sh","checksum":"` + hex64 + `"}`
	p0       = "stages.nodeReady[0]"
	noSum    = p0 + ".scriptSource: not verified: no checksum" + TerminateNoChecksumNote
)

// q is s as a JSON string literal.
func q(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// withScripts is a document whose nodeReady stage holds the given script objects.
func withScripts(scripts ...string) string {
	return `{"stages":{"nodeReady":[` + strings.Join(scripts, ",") + `]}}`
}

// withFields is a document with one valid script to which members (",k:v" pairs) are added.
func withFields(members string) string {
	return withScripts(`{"name":"s",` + okSource + members + `}`)
}

// withSource is a document with one script whose scriptSource object holds members.
func withSource(members string) string {
	return withScripts(`{"name":"s","scriptSource":{` + members + `}}`)
}

// withLocation is a document with one script at loc, with a checksum.
func withLocation(loc string) string {
	return withSource(`"scriptLocation":` + q(loc) + `,"checksum":"` + hex64 + `"`)
}

// nScripts is n valid script objects named s0, s1, …
func nScripts(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf(`{"name":"s%d",%s}`, i, okSource)
	}
	return out
}

// jsonStrings is n copies of s as JSON string literals, comma-separated.
func jsonStrings(n int, s string) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = q(s)
	}
	return strings.Join(parts, ",")
}

func lines(ps []Problem) []string {
	if len(ps) == 0 {
		return nil
	}
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	return out
}

// problems is the "path: message" lines of err, a *ValidationError (nil for nil).
func problems(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	require.NotEmpty(t, ve.Problems)
	return lines(ve.Problems)
}

type parseCase struct {
	name  string
	doc   string
	opts  Options
	errs  []string // exact, in order
	warns []string // exact, in order
}

func runParseCases(t *testing.T, cases []parseCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			doc, warns, err := Parse([]byte(tc.doc), tc.opts)
			assert.Equal(t, tc.errs, problems(t, err), "errors")
			assert.Equal(t, tc.warns, lines(warns), "warnings")
			if tc.errs == nil {
				require.NotNil(t, doc)
			} else {
				assert.Nil(t, doc)
			}
		})
	}
}

func TestParseDefaults(t *testing.T) {
	doc, warns, err := Parse([]byte(withFields("")), Options{})
	require.NoError(t, err)
	assert.Empty(t, warns)
	want := &Document{
		ScriptCachingPolicy: CacheOnce,
		Stages: StageScripts{NodeReady: []Script{{
			Name:            "s",
			ScriptSource:    ScriptSource{ScriptLocation: "s3://bucket/key.sh", Checksum: hex64},
			Arguments:       []string{},
			ExecutionPolicy: FirstBootOnly,
			OnError:         Terminate,
		}}},
	}
	assert.Equal(t, want, doc)
	assert.NotNil(t, doc.Stages.NodeReady[0].Arguments, "arguments default to a non-nil empty slice")
	assert.Nil(t, doc.Stages.NodeBootstrapped, "an absent stage is nil")

	t.Run("null optional fields mean their defaults", func(t *testing.T) {
		nulls := `{"scriptCachingPolicy":null,"stages":{"nodeBootstrapped":null,"nodeReady":[` +
			`{"name":"s","scriptSource":{"scriptLocation":"s3://bucket/key.sh","checksum":"` + hex64 +
			`","s3VersionId":null},"arguments":null,"executionPolicy":null,"onError":null}]}}`
		got, warns, err := Parse([]byte(nulls), Options{})
		require.NoError(t, err)
		assert.Empty(t, warns)
		assert.Equal(t, want, got)
	})
	t.Run("an empty s3VersionId means absent", func(t *testing.T) {
		got, _, err := Parse([]byte(withSource(`"scriptLocation":"s3://bucket/key.sh","checksum":"`+hex64+`","s3VersionId":""`)), Options{})
		require.NoError(t, err)
		assert.Equal(t, want, got)
	})
}

func TestParseValid(t *testing.T) {
	cases := []struct {
		name  string
		doc   string
		opts  Options
		check func(t *testing.T, d *Document)
	}{
		{"every field explicit", `{"scriptCachingPolicy":"REFRESH_ON_REBOOT","stages":{"nodeBootstrapped":[` +
			`{"name":"a","scriptSource":{"scriptLocation":"s3://bucket/a.sh","checksum":"` + hex64 + `","s3VersionId":"v1"},` +
			`"arguments":["x","y"],"executionPolicy":"EVERY_BOOT","onError":"STOP_SEQUENCE"}],` +
			`"nodeReady":[{"name":"b",` + okSource + `,"onError":"CONTINUE"}]}}`, Options{},
			func(t *testing.T, d *Document) {
				assert.Equal(t, RefreshOnReboot, d.ScriptCachingPolicy)
				assert.Equal(t, Script{Name: "a",
					ScriptSource: ScriptSource{ScriptLocation: "s3://bucket/a.sh", Checksum: hex64, S3VersionID: "v1"},
					Arguments:    []string{"x", "y"}, ExecutionPolicy: EveryBoot, OnError: StopSequence},
					d.Stages.NodeBootstrapped[0])
				assert.Equal(t, Continue, d.Stages.NodeReady[0].OnError)
				assert.Equal(t, FirstBootOnly, d.Stages.NodeReady[0].ExecutionPolicy)
			}},
		{"checksum normalised to lowercase", withSource(`"scriptLocation":"s3://bucket/k","checksum":"` + strings.ToUpper(hex64) + `"`), Options{},
			func(t *testing.T, d *Document) {
				assert.Equal(t, hex64, d.Stages.NodeReady[0].ScriptSource.Checksum)
			}},
		{"utf-8 byte order mark", "\xef\xbb\xbf" + withFields(""), Options{},
			func(t *testing.T, d *Document) { assert.Equal(t, "s", d.Stages.NodeReady[0].Name) }},
		{"only nodeBootstrapped", `{"stages":{"nodeBootstrapped":[{"name":"s",` + okSource + `}]}}`, Options{},
			func(t *testing.T, d *Document) {
				assert.Len(t, d.Stages.NodeBootstrapped, 1)
				assert.Nil(t, d.Stages.NodeReady)
			}},
		{"20 scripts", withScripts(nScripts(20)...), Options{},
			func(t *testing.T, d *Document) { assert.Len(t, d.Stages.NodeReady, 20) }},
		{"20 arguments of 256 characters, counted as runes", withFields(`,"arguments":[` + jsonStrings(20, strings.Repeat("é", 256)) + `]`), Options{},
			func(t *testing.T, d *Document) {
				assert.Len(t, d.Stages.NodeReady[0].Arguments, 20)
				assert.Len(t, d.Stages.NodeReady[0].Arguments[0], 512, "bytes")
			}},
		{"empty and odd arguments kept verbatim", withFields(`,"arguments":["", " spaced ", "new\nline", "<&>"]`), Options{},
			func(t *testing.T, d *Document) {
				assert.Equal(t, []string{"", " spaced ", "new\nline", "<&>"}, d.Stages.NodeReady[0].Arguments)
			}},
		{"name of 64 characters with spaces, '_' and '-'", withScripts(`{"name":` + q("0 a_b-C"+strings.Repeat("x", 57)) + `,` + okSource + `}`), Options{},
			func(t *testing.T, d *Document) { assert.Len(t, d.Stages.NodeReady[0].Name, 64) }},
		{"same name differing in case are distinct", withScripts(`{"name":"setup",`+okSource+`}`, `{"name":"Setup",`+okSource+`}`), Options{},
			func(t *testing.T, d *Document) { assert.Len(t, d.Stages.NodeReady, 2) }},
		{"location of 1024 characters", withLocation("s3://bucket/" + strings.Repeat("k", 1024-len("s3://bucket/"))), Options{},
			func(t *testing.T, d *Document) {
				assert.Len(t, d.Stages.NodeReady[0].ScriptSource.ScriptLocation, 1024)
			}},
		{"s3VersionId of 1024 characters", withSource(`"scriptLocation":"s3://bucket/k","checksum":"` + hex64 + `","s3VersionId":"` + strings.Repeat("v", 1024) + `"`), Options{},
			func(t *testing.T, d *Document) { assert.Len(t, d.Stages.NodeReady[0].ScriptSource.S3VersionID, 1024) }},
		{"scriptCachingPolicy REFRESH_ON_REBOOT", `{"scriptCachingPolicy":"REFRESH_ON_REBOOT","stages":{"nodeReady":[{"name":"s",` + okSource + `}]}}`, Options{},
			func(t *testing.T, d *Document) { assert.Equal(t, RefreshOnReboot, d.ScriptCachingPolicy) }},
		{"document of exactly 1 MiB", func() string {
			d := withFields("")
			return d + strings.Repeat(" ", MaxDocumentSize-len(d))
		}(), Options{}, func(t *testing.T, d *Document) { assert.Len(t, d.Stages.NodeReady, 1) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, _, err := Parse([]byte(tc.doc), tc.opts)
			require.NoError(t, err)
			require.NotNil(t, d)
			tc.check(t, d)
		})
	}
}

func TestParseInput(t *testing.T) {
	runParseCases(t, []parseCase{
		{name: "empty", doc: "", errs: []string{"$: invalid JSON: empty document"}},
		{name: "whitespace only", doc: " \n\t", errs: []string{"$: invalid JSON: empty document"}},
		{name: "only a byte order mark", doc: "\xef\xbb\xbf", errs: []string{"$: invalid JSON: empty document"}},
		{name: "truncated", doc: `{"stages":`, errs: []string{"$: invalid JSON: line 1, column 11: the document ends before the \"{\" opened at line 1, column 1 is closed"}},
		{name: "trailing comma located by line and column", doc: "{\n  \"stages\": {\n    \"nodeReady\": [1,]\n  }\n}",
			errs: []string{"$: invalid JSON: line 3, column 20: trailing comma before \"]\": JSON allows no comma after the last item"}},
		{name: "column counts runes", doc: `{"é": x}`, errs: []string{`$: invalid JSON: line 1, column 7: unquoted text "x": string values take double quotes`}},
		{name: "bad escape", doc: `{"a":"\q"}`, errs: []string{`$: invalid JSON: line 1, column 8: invalid escape "\q" in a string: JSON knows \" \\ \/ \b \f \n \r \t and \uXXXX (a Windows path needs \\)`}},
		{name: "data after the document", doc: withFields("") + " {}",
			errs: []string{"$: invalid JSON: line 1, column " + fmt.Sprint(len(withFields(""))+2) + ": invalid character '{' after top-level value"}},
		{name: "not JSON at all", doc: "stages:\n  nodeReady: []\n", errs: []string{`$: invalid JSON: line 1, column 1: not JSON (YAML is not read here; "pcs-lifecycle convert" reads ParallelCluster and CloudFormation YAML)`}},
		{name: "invalid UTF-8", doc: "{\"stages\": \"\xff\"}", errs: []string{"$: invalid JSON: line 1, column 13: invalid UTF-8"}},
		{name: "UTF-16 byte order mark", doc: "\xff\xfe{\x00}\x00", errs: []string{"$: invalid JSON: UTF-16 text: the document must be UTF-8"}},
		{name: "nesting deeper than 64 levels", doc: `{"x":` + strings.Repeat("[", 70) + strings.Repeat("]", 70) + `}`,
			errs: []string{"$: invalid JSON: line 1, column 69: nesting deeper than 64 levels"}},
		{name: "larger than 1 MiB", doc: withFields("") + strings.Repeat(" ", MaxDocumentSize-len(withFields(""))+1),
			errs: []string{"$: document is 1048577 bytes, larger than the limit of 1 MiB (1048576 bytes)"}},
	})
}

func TestParseTopLevel(t *testing.T) {
	runParseCases(t, []parseCase{
		{name: "array", doc: `[]`, errs: []string{"$: must be an object, got array"}},
		{name: "string", doc: `"x"`, errs: []string{"$: must be an object, got string"}},
		{name: "number", doc: `1`, errs: []string{"$: must be an object, got number"}},
		{name: "boolean", doc: `true`, errs: []string{"$: must be an object, got boolean"}},
		{name: "null", doc: `null`, errs: []string{"$: must be an object, got null"}},
		{name: "empty object", doc: `{}`, errs: []string{"stages: required"}},
		{name: "stages null", doc: `{"stages":null}`, errs: []string{"stages: required"}},
		{name: "stages array", doc: `{"stages":[]}`, errs: []string{"stages: must be an object, got array"}},
		{name: "unknown field", doc: `{"foo":1,"stages":{"nodeReady":[{"name":"s",` + okSource + `}]}}`, errs: []string{"foo: unknown field"}},
		{name: "unknown field with a close name", doc: `{"stage":{}}`,
			errs: []string{`stage: unknown field (did you mean "stages"?)`, "stages: required"}},
		{name: "unknown field differing in case", doc: `{"ScriptCachingPolicy":"CACHE_ONCE","stages":{"nodeReady":[{"name":"s",` + okSource + `}]}}`,
			errs: []string{`ScriptCachingPolicy: unknown field (did you mean "scriptCachingPolicy"?)`}},
		{name: "stage outside stages", doc: `{"nodeReady":[]}`,
			errs: []string{"nodeReady: unknown field (it belongs inside stages)", "stages: required"}},
		{name: "a GetComputeNodeGroup response", doc: `{"computeNodeGroup":{}}`,
			errs: []string{"computeNodeGroup.nodeLifecycleActions: required: this compute node group has no node lifecycle actions"}},
		{name: "key that is not an identifier", doc: `{"a b":1,"":2,"stages":{"nodeReady":[{"name":"s",` + okSource + `}]}}`,
			errs: []string{`$["a b"]: unknown field`, `$[""]: unknown field`}},
		{name: "duplicate key", doc: `{"stages":{"nodeReady":[{"name":"s",` + okSource + `}]},"stages":{}}`, errs: []string{"stages: duplicate key"}},
		{name: "scriptCachingPolicy unknown value", doc: `{"scriptCachingPolicy":"NEVER","stages":{"nodeReady":[{"name":"s",` + okSource + `}]}}`,
			errs: []string{`scriptCachingPolicy: must be one of CACHE_ONCE, REFRESH_ON_REBOOT, got "NEVER"`}},
		{name: "scriptCachingPolicy wrong case", doc: `{"scriptCachingPolicy":"refresh_on_reboot","stages":{"nodeReady":[{"name":"s",` + okSource + `}]}}`,
			errs: []string{`scriptCachingPolicy: must be one of CACHE_ONCE, REFRESH_ON_REBOOT, got "refresh_on_reboot" (did you mean "REFRESH_ON_REBOOT"? values are case-sensitive)`}},
		{name: "scriptCachingPolicy not a string", doc: `{"scriptCachingPolicy":1,"stages":{"nodeReady":[{"name":"s",` + okSource + `}]}}`,
			errs: []string{"scriptCachingPolicy: must be a string, got number"}},
	})
}

func TestParseStages(t *testing.T) {
	runParseCases(t, []parseCase{
		{name: "no stage", doc: `{"stages":{}}`, errs: []string{"stages: must contain at least one stage: nodeBootstrapped or nodeReady"}},
		{name: "only null stages", doc: `{"stages":{"nodeBootstrapped":null,"nodeReady":null}}`,
			errs: []string{"stages: must contain at least one stage: nodeBootstrapped or nodeReady"}},
		{name: "unknown stage", doc: `{"stages":{"nodeStarted":[]}}`, errs: []string{"stages.nodeStarted: unknown field"}},
		{name: "stage name wrong case", doc: `{"stages":{"NodeReady":[]}}`, errs: []string{`stages.NodeReady: unknown field (did you mean "nodeReady"?)`}},
		{name: "stage name abbreviated", doc: `{"stages":{"ready":[]}}`, errs: []string{`stages.ready: unknown field (did you mean "nodeReady"?)`}},
		{name: "stage not an array", doc: `{"stages":{"nodeReady":{}}}`, errs: []string{"stages.nodeReady: must be an array of scripts, got object"}},
		{name: "empty stage", doc: `{"stages":{"nodeReady":[]}}`, errs: []string{"stages.nodeReady: must contain 1 to 20 scripts, got 0"}},
		{name: "empty stage beside a valid one", doc: `{"stages":{"nodeBootstrapped":[{"name":"s",` + okSource + `}],"nodeReady":[]}}`,
			errs: []string{"stages.nodeReady: must contain 1 to 20 scripts, got 0"}},
		{name: "21 scripts", doc: withScripts(nScripts(21)...), errs: []string{"stages.nodeReady: must contain 1 to 20 scripts, got 21"}},
		{name: "script not an object", doc: withScripts(`"setup.sh"`), errs: []string{p0 + ": must be an object, got string"}},
		{name: "script null", doc: withScripts(`null`), errs: []string{p0 + ": must be an object, got null"}},
		{name: "duplicate stage key", doc: `{"stages":{"nodeReady":[{"name":"s",` + okSource + `}],"nodeReady":[]}}`,
			errs: []string{"stages.nodeReady: duplicate key"}},
	})
}

func TestParseName(t *testing.T) {
	runParseCases(t, []parseCase{
		{name: "missing", doc: withScripts(`{` + okSource + `}`), errs: []string{p0 + ".name: required"}},
		{name: "null", doc: withScripts(`{"name":null,` + okSource + `}`), errs: []string{p0 + ".name: required"}},
		{name: "number", doc: withScripts(`{"name":7,` + okSource + `}`), errs: []string{p0 + ".name: must be a string, got number"}},
		{name: "empty", doc: withScripts(`{"name":"",` + okSource + `}`), errs: []string{p0 + ".name: must not be empty"}},
		{name: "65 characters", doc: withScripts(`{"name":"` + strings.Repeat("n", 65) + `",` + okSource + `}`),
			errs: []string{p0 + ".name: longer than 64 characters (it has 65)"}},
	})
	pattern := p0 + ".name: must start with a letter or digit and contain only letters, digits, spaces, '_' and '-'"
	for _, name := range []string{"-x", "_x", " x", "a.b", "a/b", "café", "tab\there", "x!"} {
		runParseCases(t, []parseCase{{name: "pattern " + q(name), doc: withScripts(`{"name":` + q(name) + `,` + okSource + `}`), errs: []string{pattern}}})
	}
	runParseCases(t, []parseCase{
		{name: "duplicate in one stage", doc: withScripts(`{"name":"setup",`+okSource+`}`, `{"name":"setup",`+okSource+`}`),
			errs: []string{`stages.nodeReady[1].name: duplicate name "setup" (first used at stages.nodeReady[0].name)`}},
		{name: "duplicate across stages", doc: `{"stages":{"nodeBootstrapped":[{"name":"setup",` + okSource + `}],"nodeReady":[{"name":"setup",` + okSource + `}]}}`,
			errs: []string{`stages.nodeReady[0].name: duplicate name "setup" (first used at stages.nodeBootstrapped[0].name)`}},
		{name: "duplicate: the first in document order is the first", doc: `{"stages":{"nodeReady":[{"name":"setup",` + okSource + `}],"nodeBootstrapped":[{"name":"setup",` + okSource + `}]}}`,
			errs: []string{`stages.nodeBootstrapped[0].name: duplicate name "setup" (first used at stages.nodeReady[0].name)`}},
		{name: "three uses name the first", doc: withScripts(`{"name":"a",`+okSource+`}`, `{"name":"a",`+okSource+`}`, `{"name":"a",`+okSource+`}`),
			errs: []string{
				`stages.nodeReady[1].name: duplicate name "a" (first used at stages.nodeReady[0].name)`,
				`stages.nodeReady[2].name: duplicate name "a" (first used at stages.nodeReady[0].name)`,
			}},
		{name: "duplicate key", doc: withScripts(`{"name":"a","name":"b",` + okSource + `}`), errs: []string{p0 + ".name: duplicate key"}},
	})
}

func TestParseScriptFields(t *testing.T) {
	runParseCases(t, []parseCase{
		{name: "unknown field", doc: withFields(`,"timeout":30`), errs: []string{p0 + ".timeout: unknown field"}},
		{name: "misspelt executionPolicy", doc: withFields(`,"executionPolicies":"EVERY_BOOT"`),
			errs: []string{p0 + `.executionPolicies: unknown field (did you mean "executionPolicy"?)`}},
		{name: "snake case onError", doc: withFields(`,"on_error":"CONTINUE"`), errs: []string{p0 + `.on_error: unknown field (did you mean "onError"?)`}},
		{name: "args alias", doc: withFields(`,"args":["x"]`), errs: []string{p0 + `.args: unknown field (did you mean "arguments"?)`}},
		{name: "source by substring", doc: withFields(`,"source":{}`), errs: []string{p0 + `.source: unknown field (did you mean "scriptSource"?)`}},
		{name: "checksum outside scriptSource", doc: withFields(`,"checksum":"` + hex64 + `"`),
			errs: []string{p0 + ".checksum: unknown field (it belongs inside scriptSource)"}},
		{name: "scriptCachingPolicy on a script", doc: withFields(`,"scriptCachingPolicy":"CACHE_ONCE"`),
			errs: []string{p0 + ".scriptCachingPolicy: unknown field (it belongs at the top level of the document, for all scripts)"}},
		{name: "executionPolicy unknown value", doc: withFields(`,"executionPolicy":"ALWAYS"`),
			errs: []string{p0 + `.executionPolicy: must be one of FIRST_BOOT_ONLY, EVERY_BOOT, got "ALWAYS" (did you mean "EVERY_BOOT"?)`}},
		{name: "executionPolicy empty", doc: withFields(`,"executionPolicy":""`),
			errs: []string{p0 + `.executionPolicy: must be one of FIRST_BOOT_ONLY, EVERY_BOOT, got ""`}},
		{name: "executionPolicy wrong case", doc: withFields(`,"executionPolicy":"every_boot"`),
			errs: []string{p0 + `.executionPolicy: must be one of FIRST_BOOT_ONLY, EVERY_BOOT, got "every_boot" (did you mean "EVERY_BOOT"? values are case-sensitive)`}},
		{name: "executionPolicy camel case", doc: withFields(`,"executionPolicy":"FirstBootOnly"`),
			errs: []string{p0 + `.executionPolicy: must be one of FIRST_BOOT_ONLY, EVERY_BOOT, got "FirstBootOnly" (did you mean "FIRST_BOOT_ONLY"? values are case-sensitive)`}},
		{name: "executionPolicy not a string", doc: withFields(`,"executionPolicy":["EVERY_BOOT"]`),
			errs: []string{p0 + ".executionPolicy: must be a string, got array"}},
		{name: "onError unknown value", doc: withFields(`,"onError":"ABORT"`),
			errs: []string{p0 + `.onError: must be one of TERMINATE, STOP_SEQUENCE, CONTINUE, got "ABORT" (did you mean "TERMINATE"?)`}},
		{name: "onError near miss", doc: withFields(`,"onError":"STOP"`),
			errs: []string{p0 + `.onError: must be one of TERMINATE, STOP_SEQUENCE, CONTINUE, got "STOP" (did you mean "STOP_SEQUENCE"?)`}},
		{name: "onError misspelt", doc: withFields(`,"onError":"CONTINIUE"`),
			errs: []string{p0 + `.onError: must be one of TERMINATE, STOP_SEQUENCE, CONTINUE, got "CONTINIUE" (did you mean "CONTINUE"?)`}},
		{name: "onError far from every value", doc: withFields(`,"onError":"REBOOT"`),
			errs: []string{p0 + `.onError: must be one of TERMINATE, STOP_SEQUENCE, CONTINUE, got "REBOOT"`}},
		{name: "executionPolicy abbreviated", doc: withFields(`,"executionPolicy":"FIRST_BOOT"`),
			errs: []string{p0 + `.executionPolicy: must be one of FIRST_BOOT_ONLY, EVERY_BOOT, got "FIRST_BOOT" (did you mean "FIRST_BOOT_ONLY"?)`}},
		{name: "onError as logged", doc: withFields(`,"onError":"StopSequence"`),
			errs: []string{p0 + `.onError: must be one of TERMINATE, STOP_SEQUENCE, CONTINUE, got "StopSequence" (did you mean "STOP_SEQUENCE"? values are case-sensitive)`}},
		{name: "onError not a string", doc: withFields(`,"onError":false`), errs: []string{p0 + ".onError: must be a string, got boolean"}},
		{name: "duplicate onError", doc: withFields(`,"onError":"CONTINUE","onError":"TERMINATE"`), errs: []string{p0 + ".onError: duplicate key"}},
	})
}

func TestParseArguments(t *testing.T) {
	runParseCases(t, []parseCase{
		{name: "string", doc: withFields(`,"arguments":"a b"`), errs: []string{p0 + ".arguments: must be an array of strings, got string"}},
		{name: "object", doc: withFields(`,"arguments":{}`), errs: []string{p0 + ".arguments: must be an array of strings, got object"}},
		{name: "21 arguments", doc: withFields(`,"arguments":[` + jsonStrings(21, "a") + `]`),
			errs: []string{p0 + ".arguments: must contain at most 20 arguments, got 21"}},
		{name: "number element", doc: withFields(`,"arguments":["a",1]`), errs: []string{p0 + ".arguments[1]: must be a string, got number"}},
		{name: "null element", doc: withFields(`,"arguments":[null]`), errs: []string{p0 + ".arguments[0]: must be a string, got null"}},
		{name: "array element", doc: withFields(`,"arguments":[["a"]]`), errs: []string{p0 + ".arguments[0]: must be a string, got array"}},
		{name: "257 characters", doc: withFields(`,"arguments":["ok",` + q(strings.Repeat("é", 257)) + `]`),
			errs: []string{p0 + ".arguments[1]: longer than 256 characters (it has 257)"}},
		{name: "NUL character", doc: withFields(`,"arguments":["a\u0000b"]`), errs: []string{p0 + ".arguments[0]: must not contain a NUL character"}},
		{name: "every element reported", doc: withFields(`,"arguments":[1,"ok",true,` + q(strings.Repeat("x", 300)) + `]`),
			errs: []string{
				p0 + ".arguments[0]: must be a string, got number",
				p0 + ".arguments[2]: must be a string, got boolean",
				p0 + ".arguments[3]: longer than 256 characters (it has 300)",
			}},
	})
}

func TestParseScriptSource(t *testing.T) {
	src := p0 + ".scriptSource"
	runParseCases(t, []parseCase{
		{name: "missing", doc: withScripts(`{"name":"s"}`), errs: []string{src + ": required"}},
		{name: "null", doc: withScripts(`{"name":"s","scriptSource":null}`), errs: []string{src + ": required"}},
		{name: "string", doc: withScripts(`{"name":"s","scriptSource":"s3://bucket/k"}`), errs: []string{src + ": must be an object, got string"}},
		{name: "unknown field", doc: withSource(`"scriptLocation":"s3://bucket/k","checksum":"` + hex64 + `","region":"us-east-1"`),
			errs: []string{src + ".region: unknown field"}},
		{name: "url alias", doc: withSource(`"url":"https://example.com/x"`),
			errs:  []string{src + `.url: unknown field (did you mean "scriptLocation"?)`, src + ".scriptLocation: required"},
			warns: []string{noSum}},
		{name: "sha256 alias", doc: withSource(`"scriptLocation":"s3://bucket/k","sha256":"` + hex64 + `"`),
			errs: []string{src + `.sha256: unknown field (did you mean "checksum"?)`}, warns: []string{noSum}},
		{name: "versionId", doc: withSource(`"scriptLocation":"s3://bucket/k","checksum":"` + hex64 + `","versionId":"v"`),
			errs: []string{src + `.versionId: unknown field (did you mean "s3VersionId"?)`}},
		{name: "duplicate checksum", doc: withSource(`"scriptLocation":"s3://bucket/k","checksum":"` + hex64 + `","checksum":"` + hex64 + `"`),
			errs: []string{src + ".checksum: duplicate key"}},

		{name: "checksum number", doc: withSource(`"scriptLocation":"s3://bucket/k","checksum":1`), errs: []string{src + ".checksum: must be a string, got number"}},
		{name: "checksum empty", doc: withSource(`"scriptLocation":"s3://bucket/k","checksum":""`),
			errs: []string{src + ".checksum: must be exactly 64 hexadecimal characters (a SHA-256 digest), got 0"}},
		{name: "checksum 63", doc: withSource(`"scriptLocation":"s3://bucket/k","checksum":"` + hex64[1:] + `"`),
			errs: []string{src + ".checksum: must be exactly 64 hexadecimal characters (a SHA-256 digest), got 63"}},
		{name: "checksum 65", doc: withSource(`"scriptLocation":"s3://bucket/k","checksum":"` + hex64 + `0"`),
			errs: []string{src + ".checksum: must be exactly 64 hexadecimal characters (a SHA-256 digest), got 65"}},
		{name: "checksum not hex", doc: withSource(`"scriptLocation":"s3://bucket/k","checksum":"` + strings.Repeat("g", 64) + `"`),
			errs: []string{src + ".checksum: must be exactly 64 hexadecimal characters (a SHA-256 digest), got a non-hexadecimal character"}},
		{name: "checksum with prefix", doc: withSource(`"scriptLocation":"s3://bucket/k","checksum":"sha256:` + hex64 + `"`),
			errs: []string{src + `.checksum: must be exactly 64 hexadecimal characters (a SHA-256 digest), without the "sha256:" prefix`}},

		{name: "s3VersionId number", doc: withSource(`"scriptLocation":"s3://bucket/k","checksum":"` + hex64 + `","s3VersionId":5`),
			errs: []string{src + ".s3VersionId: must be a string, got number"}},
		{name: "s3VersionId 1025 characters", doc: withSource(`"scriptLocation":"s3://bucket/k","checksum":"` + hex64 + `","s3VersionId":"` + strings.Repeat("v", 1025) + `"`),
			errs: []string{src + ".s3VersionId: longer than 1024 characters (it has 1025)"}},
		{name: "s3VersionId control character", doc: withSource(`"scriptLocation":"s3://bucket/k","checksum":"` + hex64 + `","s3VersionId":"a\nb"`),
			errs: []string{src + ".s3VersionId: must not contain control characters"}},
		{name: "s3VersionId with https", doc: withSource(`"scriptLocation":"https://example.com/k","checksum":"` + hex64 + `","s3VersionId":"v1"`),
			errs: []string{src + ".s3VersionId: only allowed with an s3:// scriptLocation"}},
		{name: "empty s3VersionId with https is absent", doc: withSource(`"scriptLocation":"https://example.com/k","checksum":"` + hex64 + `","s3VersionId":""`)},
		{name: "s3VersionId with http", doc: withSource(`"scriptLocation":"http://example.com/k","checksum":"` + hex64 + `","s3VersionId":"v1"`),
			errs: []string{
				src + ".scriptLocation: http:// is not accepted: use https:// or s3://",
				src + ".s3VersionId: only allowed with an s3:// scriptLocation",
			}},
	})
}

func TestParseScriptLocation(t *testing.T) {
	loc := p0 + ".scriptSource.scriptLocation"
	bucketMsg := ": must be 3 to 63 lowercase letters, digits, '.' and '-', starting and ending with a letter or digit"
	labelMsg := ": each dot-separated label must be 1 to 63 letters, digits, '-' and '_', starting and ending with a letter or digit (use the xn-- form of an international name)"
	notAPI := ` is accepted here but not by the PCS API (it requires a DNS name with a top-level domain)`
	strict := Options{APIStrict: true}
	runParseCases(t, []parseCase{
		{name: "missing", doc: withSource(`"checksum":"` + hex64 + `"`), errs: []string{loc + ": required"}},
		{name: "null", doc: withSource(`"scriptLocation":null,"checksum":"` + hex64 + `"`), errs: []string{loc + ": required"}},
		{name: "number", doc: withSource(`"scriptLocation":1,"checksum":"` + hex64 + `"`), errs: []string{loc + ": must be a string, got number"}},
		{name: "empty", doc: withLocation(""), errs: []string{loc + ": must not be empty"}},
		{name: "1025 characters", doc: withLocation("s3://bucket/" + strings.Repeat("k", 1025-len("s3://bucket/"))), errs: []string{loc + ": longer than 1024 characters (it has 1025)"}},

		{name: "http", doc: withLocation("http://example.com/x.sh"), errs: []string{loc + ": http:// is not accepted: use https:// or s3://"}},
		{name: "HTTP", doc: withLocation("HTTP://example.com/x.sh"), errs: []string{loc + ": http:// is not accepted: use https:// or s3://"}},
		{name: "ftp", doc: withLocation("ftp://example.com/x.sh"), errs: []string{loc + `: unsupported scheme "ftp": must be s3:// or https://`}},
		{name: "file", doc: withLocation("file:///opt/x.sh"), errs: []string{loc + `: unsupported scheme "file": must be s3:// or https://`}},
		{name: "no scheme", doc: withLocation("bucket/x.sh"), errs: []string{loc + ": must be an s3://bucket/key or https:// URL"}},
		{name: "local path", doc: withLocation("/opt/x.sh"), errs: []string{loc + ": must be an s3://bucket/key or https:// URL"}},
		{name: "S3 uppercase", doc: withLocation("S3://bucket/x.sh"), errs: []string{loc + `: scheme must be lowercase "s3://"`}},
		{name: "HTTPS uppercase", doc: withLocation("HTTPS://example.com/x.sh"), errs: []string{loc + `: scheme must be lowercase "https://"`}},

		{name: "s3 key with spaces", doc: withLocation("s3://bucket/my scripts/x.sh")},
		{name: "s3 bucket with dots and dashes", doc: withLocation("s3://my.bucket-1/x.sh")},
		{name: "s3 bucket of 63", doc: withLocation("s3://" + strings.Repeat("b", 63) + "/x.sh")},
		{name: "s3 bucket uppercase", doc: withLocation("s3://Bucket/x.sh"), errs: []string{loc + `: invalid bucket name "Bucket"` + bucketMsg}},
		{name: "s3 bucket of 2", doc: withLocation("s3://ab/x.sh"), errs: []string{loc + `: invalid bucket name "ab"` + bucketMsg}},
		{name: "s3 bucket of 64", doc: withLocation("s3://" + strings.Repeat("b", 64) + "/x.sh"), errs: []string{loc + `: invalid bucket name "` + strings.Repeat("b", 64) + `"` + bucketMsg}},
		{name: "s3 bucket starting with '-'", doc: withLocation("s3://-bucket/x.sh"), errs: []string{loc + `: invalid bucket name "-bucket"` + bucketMsg}},
		{name: "s3 bucket ending with '.'", doc: withLocation("s3://bucket./x.sh"), errs: []string{loc + `: invalid bucket name "bucket."` + bucketMsg}},
		{name: "s3 bucket with '_'", doc: withLocation("s3://my_bucket/x.sh"), errs: []string{loc + `: invalid bucket name "my_bucket"` + bucketMsg}},
		{name: "s3 no bucket", doc: withLocation("s3:///x.sh"), errs: []string{loc + `: invalid bucket name ""` + bucketMsg}},
		{name: "s3 no key", doc: withLocation("s3://bucket"), errs: []string{loc + ": missing object key: must be s3://bucket/key"}},
		{name: "s3 empty key", doc: withLocation("s3://bucket/"), errs: []string{loc + ": missing object key: must be s3://bucket/key"}},
		{name: "s3 control character", doc: withLocation("s3://bucket/x\n.sh"), errs: []string{loc + ": must not contain control characters"}},

		{name: "https without path", doc: withLocation("https://example.com")},
		{name: "https with port, query and fragment", doc: withLocation("https://example.com:8443/a/b.sh?ref=main#frag")},
		{name: "https host with '_' and capitals", doc: withLocation("https://My_Host.Example.COM/x.sh")},
		{name: "https missing host", doc: withLocation("https://"), errs: []string{loc + ": missing host: must be https://host[:port]/path"}},
		{name: "https empty host", doc: withLocation("https:///x.sh"), errs: []string{loc + ": missing host: must be https://host[:port]/path"}},
		{name: "https user", doc: withLocation("https://user@example.com/x.sh"), errs: []string{loc + ": must not contain user information (user@host)"}},
		{name: "https user and password", doc: withLocation("https://user:secret@example.com/x.sh"), errs: []string{loc + ": must not contain user information (user@host)"}},
		{name: "https '@' in the path is fine", doc: withLocation("https://example.com/@v1/x.sh")},
		{name: "https port 0", doc: withLocation("https://example.com:0/x.sh"), errs: []string{loc + `: invalid port "0": must be 1 to 65535`}},
		{name: "https port 65536", doc: withLocation("https://example.com:65536/x.sh"), errs: []string{loc + `: invalid port "65536": must be 1 to 65535`}},
		{name: "https port 65535", doc: withLocation("https://example.com:65535/x.sh")},
		{name: "https empty port", doc: withLocation("https://example.com:/x.sh"), errs: []string{loc + `: invalid port "": must be 1 to 65535`}},
		{name: "https port not a number", doc: withLocation("https://example.com:https/x.sh"), errs: []string{loc + `: invalid port "https": must be 1 to 65535`}},
		{name: "https port with sign", doc: withLocation("https://example.com:+443/x.sh"), errs: []string{loc + `: invalid port "+443": must be 1 to 65535`}},
		{name: "https space", doc: withLocation("https://example.com/my script.sh"), errs: []string{loc + ": must not contain whitespace or control characters"}},
		{name: "https tab", doc: withLocation("https://example.com/x.sh\t"), errs: []string{loc + ": must not contain whitespace or control characters"}},
		{name: "https non-breaking space", doc: withLocation("https://example.com/x\u00a0.sh"), errs: []string{loc + ": must not contain whitespace or control characters"}},
		{name: "https bad escape", doc: withLocation("https://example.com/%zz.sh"), errs: []string{loc + `: invalid URL: invalid URL escape "%zz"`}},
		{name: "https label starting with '-'", doc: withLocation("https://-example.com/x.sh"), errs: []string{loc + `: invalid host "-example.com"` + labelMsg}},
		{name: "https label ending with '-'", doc: withLocation("https://example-.com/x.sh"), errs: []string{loc + `: invalid host "example-.com"` + labelMsg}},
		{name: "https label with '!'", doc: withLocation("https://ex!ample.com/x.sh"), errs: []string{loc + `: invalid host "ex!ample.com"` + labelMsg}},
		{name: "https trailing dot", doc: withLocation("https://example.com./x.sh"), errs: []string{loc + `: invalid host "example.com."` + labelMsg}},
		{name: "https international name", doc: withLocation("https://bücher.de/x.sh"), errs: []string{loc + `: invalid host "bücher.de"` + labelMsg}},
		{name: "https label of 64", doc: withLocation("https://" + strings.Repeat("a", 64) + ".com/x.sh"),
			errs: []string{loc + `: invalid host "` + strings.Repeat("a", 64) + `"…` + labelMsg}},
		{name: "https host of 254", doc: withLocation("https://" + strings.Repeat("a.", 125) + "comx/x.sh"),
			errs: []string{loc + ": invalid host: longer than 253 characters (it has 254)"}},
		{name: "https bad IPv4", doc: withLocation("https://999.0.0.1/x.sh"), errs: []string{loc + `: invalid host "999.0.0.1": not an IPv4 address`}},
		{name: "https numeric single label", doc: withLocation("https://1234/x.sh"), errs: []string{loc + `: invalid host "1234": not an IPv4 address`}},
		{name: "https unbracketed IPv6", doc: withLocation("https://fd00::1/x.sh"),
			errs: []string{loc + `: invalid host "fd00::1": an IPv6 address must be in brackets, as https://[::1]/`}},
		{name: "https unclosed bracket", doc: withLocation("https://[fd00::1/x.sh"), errs: []string{loc + `: invalid host "[fd00::1": not a bracketed IPv6 address`}},
		{name: "https IPv4 in brackets", doc: withLocation("https://[10.0.0.1]/x.sh"),
			errs: []string{loc + `: invalid host "[10.0.0.1]": not an IPv6 address (zones are not accepted)`}},
		{name: "https IPv6 zone", doc: withLocation("https://[fe80::1%25eth0]/x.sh"),
			errs: []string{loc + `: invalid host "[fe80::1%25eth0]": not an IPv6 address (zones are not accepted)`}},

		// Hosts the API refuses: accepted with a warning by default, refused with APIStrict.
		{name: "IPv4 default", doc: withLocation("https://10.0.0.1:8443/x.sh"), warns: []string{loc + `: host "10.0.0.1"` + notAPI}},
		{name: "IPv6 default", doc: withLocation("https://[fd00::1]:8443/x.sh"), warns: []string{loc + `: host "[fd00::1]"` + notAPI}},
		{name: "localhost default", doc: withLocation("https://localhost/x.sh"), warns: []string{loc + `: host "localhost"` + notAPI}},
		{name: "single label default", doc: withLocation("https://mirror/x.sh"), warns: []string{loc + `: host "mirror"` + notAPI}},
		{name: "numeric top-level domain default", doc: withLocation("https://example.c0m/x.sh"), warns: []string{loc + `: host "example.c0m"` + notAPI}},
		{name: "IPv4 strict", opts: strict, doc: withLocation("https://10.0.0.1:8443/x.sh"),
			errs: []string{loc + `: host "10.0.0.1" is an IP address: the PCS API requires a DNS name with a top-level domain`}},
		{name: "IPv6 strict", opts: strict, doc: withLocation("https://[fd00::1]/x.sh"),
			errs: []string{loc + `: host "[fd00::1]" is an IP address: the PCS API requires a DNS name with a top-level domain`}},
		{name: "localhost strict", opts: strict, doc: withLocation("https://localhost/x.sh"),
			errs: []string{loc + `: host "localhost" has no top-level domain: the PCS API requires a DNS name with a top-level domain`}},
		{name: "single label strict", opts: strict, doc: withLocation("https://mirror:443/x.sh"),
			errs: []string{loc + `: host "mirror" has no top-level domain: the PCS API requires a DNS name with a top-level domain`}},
		{name: "numeric top-level domain strict", opts: strict, doc: withLocation("https://example.c0m/x.sh"),
			errs: []string{loc + `: host "example.c0m" has no top-level domain: the PCS API requires a DNS name with a top-level domain`}},
		{name: "DNS name strict", opts: strict, doc: withLocation("https://scripts.example.com:8443/x.sh")},
		{name: "DNS name with '_' strict", opts: strict, doc: withLocation("https://my_host.example.com/x.sh")},
		{name: "s3 strict", opts: strict, doc: withLocation("s3://bucket/x.sh")},
		{name: "http strict", opts: strict, doc: withLocation("http://example.com/x.sh"), errs: []string{loc + ": http:// is not accepted: use https:// or s3://"}},
	})
}

func TestParseWarnings(t *testing.T) {
	loc := p0 + ".scriptSource.scriptLocation"
	presigned := loc + ": looks like a presigned URL: nodes launched after it expires cannot download the script"
	runParseCases(t, []parseCase{
		{name: "no checksum", doc: withSource(`"scriptLocation":"s3://bucket/k"`), warns: []string{noSum}},
		{name: "null checksum", doc: withSource(`"scriptLocation":"s3://bucket/k","checksum":null`), warns: []string{noSum}},
		{name: "presigned v4", doc: withLocation("https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Expires=60&X-Amz-Signature=ab"),
			warns: []string{presigned}},
		{name: "presigned v4 lowercase", doc: withLocation("https://b.s3.amazonaws.com/k?x-amz-signature=ab"), warns: []string{presigned}},
		{name: "presigned v2", doc: withLocation("https://b.s3.amazonaws.com/k?AWSAccessKeyId=A&Signature=s&Expires=1"), warns: []string{presigned}},
		{name: "a signature alone does not expire", doc: withLocation("https://example.com/k?Signature=s")},
		{name: "query in the fragment is not a query", doc: withLocation("https://example.com/k#?X-Amz-Signature=s")},
		{name: "warnings are sorted in document order", doc: withScripts(
			`{"name":"a","scriptSource":{"scriptLocation":"https://10.0.0.1/a?X-Amz-Expires=1"}}`,
			`{"name":"b","scriptSource":{"scriptLocation":"s3://bucket/b"}}`),
			warns: []string{
				p0 + ".scriptSource: not verified: no checksum on an https:// location: nothing checks what the server sends" + TerminateNoChecksumNote,
				loc + `: host "10.0.0.1" is accepted here but not by the PCS API (it requires a DNS name with a top-level domain)`,
				presigned,
				"stages.nodeReady[1].scriptSource: not verified: no checksum" + TerminateNoChecksumNote,
			}},
		{name: "warnings come with errors", doc: withScripts(`{"name":"a","scriptSource":{"scriptLocation":"s3://bucket/k"},"onError":"NOPE"}`),
			errs:  []string{p0 + ".onError: must be one of TERMINATE, STOP_SEQUENCE, CONTINUE, got \"NOPE\""},
			warns: []string{noSum}},
	})
}

func TestParseWrapped(t *testing.T) {
	bare := `{"scriptCachingPolicy":"REFRESH_ON_REBOOT","stages":{"nodeReady":[{"name":"s",` + okSource + `,"arguments":["a"]}]}}`
	want, _, err := Parse([]byte(bare), Options{})
	require.NoError(t, err)
	got, _, err := Parse([]byte(`{"nodeLifecycleActions":`+bare+`}`), Options{})
	require.NoError(t, err)
	assert.Equal(t, want, got, "the wrapped form decodes to the same document")
	assert.Equal(t, want.Marshal(), got.Marshal())

	runParseCases(t, []parseCase{
		{name: "paths are prefixed", doc: `{"nodeLifecycleActions":{"stages":{"nodeReady":[{"name":"s","scriptSource":{"scriptLocation":"s3://bucket/k"},"arguments":[1]}]}}}`,
			errs:  []string{"nodeLifecycleActions.stages.nodeReady[0].arguments[0]: must be a string, got number"},
			warns: []string{"nodeLifecycleActions.stages.nodeReady[0].scriptSource: not verified: no checksum" + TerminateNoChecksumNote}},
		{name: "missing stages", doc: `{"nodeLifecycleActions":{}}`, errs: []string{"nodeLifecycleActions.stages: required"}},
		{name: "null", doc: `{"nodeLifecycleActions":null}`, errs: []string{"nodeLifecycleActions: required"}},
		{name: "array", doc: `{"nodeLifecycleActions":[]}`, errs: []string{"nodeLifecycleActions: must be an object, got array"}},
		{name: "unknown field in the wrapped object", doc: `{"nodeLifecycleActions":{"stages":{"nodeReady":[{"name":"s",` + okSource + `}]},"version":1}}`,
			errs: []string{"nodeLifecycleActions.version: unknown field"}},
		{name: "a known field beside the wrapper", doc: `{"scriptCachingPolicy":"CACHE_ONCE","nodeLifecycleActions":{"stages":{"nodeReady":[{"name":"s",` + okSource + `}]}}}`,
			errs: []string{"scriptCachingPolicy: unknown field (it belongs inside nodeLifecycleActions)"}},
		{name: "an unknown field beside the wrapper", doc: `{"nodeLifecycleActions":{"stages":{"nodeReady":[{"name":"s",` + okSource + `}]}},"clusterId":"pcs_x"}`,
			errs: []string{"clusterId: unknown field"}},
		{name: "duplicate wrapper", doc: `{"nodeLifecycleActions":{"stages":{"nodeReady":[{"name":"s",` + okSource + `}]}},"nodeLifecycleActions":{}}`,
			errs: []string{"nodeLifecycleActions: duplicate key"}},
	})
}

func TestParseAllErrorsAtOnce(t *testing.T) {
	doc := `{
  "scriptCachingPolicy": "ONCE",
  "stages": {
    "nodeReady": [
      {"name": "b", "scriptSource": {"scriptLocation": "s3://bucket/b.sh", "checksum": "` + hex64 + `"}},
      {"name": "", "scriptSource": {"scriptLocation": "http://x/y.sh", "checksum": "xyz"}, "arguments": [1, "` + strings.Repeat("a", 257) + `"]}
    ],
    "nodeBootstrapped": [
      {"name": "b", "scriptSource": {"scriptLocation": "s3://bucket/a.sh", "checksum": "` + hex64 + `"}, "executionPolicy": "first_boot_only", "extra": 1},
      {"scriptSource": {}, "onError": 3}
    ]
  },
  "stage": 1
}`
	want := []string{
		`scriptCachingPolicy: must be one of CACHE_ONCE, REFRESH_ON_REBOOT, got "ONCE" (did you mean "CACHE_ONCE"?)`,
		"stages.nodeReady[1].name: must not be empty",
		"stages.nodeReady[1].scriptSource.scriptLocation: http:// is not accepted: use https:// or s3://",
		"stages.nodeReady[1].scriptSource.checksum: must be exactly 64 hexadecimal characters (a SHA-256 digest), got 3",
		"stages.nodeReady[1].arguments[0]: must be a string, got number",
		"stages.nodeReady[1].arguments[1]: longer than 256 characters (it has 257)",
		`stages.nodeBootstrapped[0].name: duplicate name "b" (first used at stages.nodeReady[0].name)`,
		`stages.nodeBootstrapped[0].executionPolicy: must be one of FIRST_BOOT_ONLY, EVERY_BOOT, got "first_boot_only" (did you mean "FIRST_BOOT_ONLY"? values are case-sensitive)`,
		"stages.nodeBootstrapped[0].extra: unknown field",
		"stages.nodeBootstrapped[1].scriptSource.scriptLocation: required",
		"stages.nodeBootstrapped[1].onError: must be a string, got number",
		"stages.nodeBootstrapped[1].name: required",
		`stage: unknown field (did you mean "stages"?)`,
	}
	for i := 0; i < 3; i++ { // deterministic
		d, warns, err := Parse([]byte(doc), Options{})
		assert.Nil(t, d)
		assert.Equal(t, want, problems(t, err))
		assert.Equal(t, []string{"stages.nodeBootstrapped[1].scriptSource: not verified: no checksum" + TerminateNoChecksumNote}, lines(warns))
	}
}

func TestValidationError(t *testing.T) {
	_, _, err := Parse([]byte(`{"stages":{"nodeReady":[{"name":1}]},"x":1}`), Options{})
	require.Error(t, err)
	var ve *ValidationError
	require.True(t, errors.As(err, &ve))
	// A missing field is reported where the object lacking it ends.
	assert.Equal(t, "stages.nodeReady[0].name: must be a string, got number\n"+
		"stages.nodeReady[0].scriptSource: required\n"+
		"x: unknown field", err.Error())
	assert.Equal(t, "invalid configuration", (&ValidationError{}).Error())
}

func TestScripts(t *testing.T) {
	d, _, err := Parse([]byte(`{"stages":{"nodeReady":[{"name":"r1",`+okSource+`},{"name":"r2",`+okSource+`}]}}`), Options{})
	require.NoError(t, err)
	names := func(ss []Script) []string {
		var out []string
		for _, s := range ss {
			out = append(out, s.Name)
		}
		return out
	}
	assert.Equal(t, []string{"r1", "r2"}, names(d.Scripts(StageNodeReady)))
	assert.Nil(t, d.Scripts(StageNodeBootstrapped), "absent stage")
	assert.Nil(t, d.Scripts("nodeready"), "not a stage name")
	assert.Nil(t, (*Document)(nil).Scripts(StageNodeReady))
}

func TestSeedDocument(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "documents", "seed.json"))
	require.NoError(t, err)
	doc, warns, err := Parse(data, Options{})
	require.NoError(t, err)
	assert.Equal(t, []string{"stages.nodeBootstrapped[1].scriptSource: not verified: no checksum"}, lines(warns), "its onError is STOP_SEQUENCE")
	want := &Document{
		ScriptCachingPolicy: CacheOnce,
		Stages: StageScripts{
			NodeBootstrapped: []Script{
				{Name: "record-first-boot",
					ScriptSource: ScriptSource{ScriptLocation: "s3://bucket/scripts/record-boot.sh",
						Checksum:    "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
						S3VersionID: "3HL4kqtJlcpXroDTDmJ+rmSpXd3dIbrHY+MTRCxf3vjVBH40Nr8X8gdRQBpUMLUo"},
					Arguments: []string{"bootstrapped-first-boot-only"}, ExecutionPolicy: FirstBootOnly, OnError: Continue},
				{Name: "record-every-boot",
					ScriptSource: ScriptSource{ScriptLocation: "s3://bucket/scripts/record-boot.sh"},
					Arguments:    []string{"bootstrapped-every-boot"}, ExecutionPolicy: EveryBoot, OnError: StopSequence},
			},
			NodeReady: []Script{
				{Name: "Join Slurm partition",
					ScriptSource: ScriptSource{ScriptLocation: "https://scripts.example.com/pcs/ready.sh?ref=main",
						Checksum: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
					Arguments: []string{}, ExecutionPolicy: FirstBootOnly, OnError: Terminate},
				{Name: "fail_terminate",
					ScriptSource: ScriptSource{ScriptLocation: "s3://my.bucket-01/path with spaces/fail.sh",
						Checksum: "2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae"},
					Arguments: []string{"", "two words", "--flag=<x>&y"}, ExecutionPolicy: EveryBoot, OnError: Terminate},
			},
		},
	}
	assert.Equal(t, want, doc)

	strictDoc, _, err := Parse(data, Options{APIStrict: true})
	require.NoError(t, err, "the seed document is valid for the API too")
	assert.Equal(t, doc, strictDoc)

	t.Run("as written in SPEC §2, with its placeholders", func(t *testing.T) {
		spec := `{
  "scriptCachingPolicy": "CACHE_ONCE",
  "stages": {
    "nodeBootstrapped": [
      {"name": "record-first-boot",
       "scriptSource": {"scriptLocation": "s3://bucket/scripts/record-boot.sh",
                        "checksum": "<64 hex, optional>", "s3VersionId": "<optional>"},
       "arguments": ["bootstrapped-first-boot-only"],
       "executionPolicy": "FIRST_BOOT_ONLY",
       "onError": "CONTINUE"}
    ]
  }
}`
		_, _, err := Parse([]byte(spec), Options{})
		assert.Equal(t, []string{"stages.nodeBootstrapped[0].scriptSource.checksum: must be exactly 64 hexadecimal characters (a SHA-256 digest), got 18"},
			problems(t, err))
	})
}

func TestMarshal(t *testing.T) {
	doc, _, err := Parse([]byte(`{"stages":{"nodeReady":[{"onError":"CONTINUE","arguments":["<a>&b","é"],"scriptSource":{"s3VersionId":"v","checksum":"`+
		strings.ToUpper(hex64)+`","scriptLocation":"s3://bucket/k"},"name":"n"}]}}`), Options{})
	require.NoError(t, err)
	want := `{"scriptCachingPolicy":"CACHE_ONCE","stages":{"nodeReady":[{"name":"n","scriptSource":{"scriptLocation":"s3://bucket/k","checksum":"` +
		hex64 + `","s3VersionId":"v"},"arguments":["<a>&b","é"],"executionPolicy":"FIRST_BOOT_ONLY","onError":"CONTINUE"}]}}`
	assert.Equal(t, want, string(doc.Marshal()))

	t.Run("a hand-built document gets the defaults", func(t *testing.T) {
		d := &Document{Stages: StageScripts{NodeBootstrapped: []Script{{Name: "x", ScriptSource: ScriptSource{ScriptLocation: "s3://bucket/x", Checksum: "AB"}}}}}
		assert.Equal(t, `{"scriptCachingPolicy":"CACHE_ONCE","stages":{"nodeBootstrapped":[{"name":"x","scriptSource":{"scriptLocation":"s3://bucket/x","checksum":"ab"},"arguments":[],"executionPolicy":"FIRST_BOOT_ONLY","onError":"TERMINATE"}]}}`,
			string(d.Marshal()))
		assert.Equal(t, OnError(""), d.Stages.NodeBootstrapped[0].OnError, "Marshal does not change the document")
		assert.Equal(t, "null", string((*Document)(nil).Marshal()))
	})

	t.Run("equal documents marshal to the same bytes", func(t *testing.T) {
		a, _, err := Parse([]byte(`{"stages":{"nodeReady":[{"name":"s",`+okSource+`}]}}`), Options{})
		require.NoError(t, err)
		b, _, err := Parse([]byte("\xef\xbb\xbf{\n \"nodeLifecycleActions\": {\"stages\": {\"nodeReady\": [{\"name\": \"s\", \"arguments\": [], \"onError\": \"TERMINATE\", "+
			okSource+`}]}, "scriptCachingPolicy": "CACHE_ONCE"}}`), Options{})
		require.NoError(t, err)
		assert.Equal(t, a.Marshal(), b.Marshal())
	})
}

func TestMarshalRoundTrip(t *testing.T) {
	docs := map[string]string{
		"minimal":  withFields(""),
		"explicit": withFields(`,"arguments":["a","","<&>","\u2028","ü"],"executionPolicy":"EVERY_BOOT","onError":"STOP_SEQUENCE"`),
		"both stages": `{"scriptCachingPolicy":"REFRESH_ON_REBOOT","stages":{"nodeReady":[{"name":"r",` + okSource + `}],` +
			`"nodeBootstrapped":[{"name":"b","scriptSource":{"scriptLocation":"https://[::1]:8443/b?x=1"}}]}}`,
		"wrapped": `{"nodeLifecycleActions":` + withFields("") + `}`,
	}
	files, err := filepath.Glob(filepath.Join("testdata", "documents", "*.json"))
	require.NoError(t, err)
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		docs[filepath.Base(f)] = string(data)
	}
	valid := 0
	for name, text := range docs {
		t.Run(name, func(t *testing.T) {
			doc, _, err := Parse([]byte(text), Options{})
			if err != nil {
				return // the invalid golden documents
			}
			valid++
			out := doc.Marshal()
			again, _, err := Parse(out, Options{})
			require.NoError(t, err)
			assert.Equal(t, doc, again)
			assert.Equal(t, out, again.Marshal())
		})
	}
	assert.GreaterOrEqual(t, valid, 6)
}
