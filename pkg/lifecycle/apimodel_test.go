//go:build apimodel

package lifecycle

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// apiModelEnv names the botocore service model of PCS (service-2.json) the test reads.
const apiModelEnv = "PCS_API_MODEL"

// shape is the part of a botocore shape the nodeLifecycleActions shapes use.
type shape struct {
	Type     string `json:"type"`
	Required []string
	Members  map[string]struct {
		Shape string `json:"shape"`
	} `json:"members"`
	Member *struct {
		Shape string `json:"shape"`
	} `json:"member"`
	Min     *int     `json:"min"`
	Max     *int     `json:"max"`
	Pattern string   `json:"pattern"`
	Enum    []string `json:"enum"`
}

type apiModel struct {
	shapes map[string]shape
	re     map[string]*regexp.Regexp
}

func loadModel(t *testing.T) *apiModel {
	t.Helper()
	p := os.Getenv(apiModelEnv)
	if p == "" {
		t.Fatalf("%s is not set: point it at the PCS botocore service model (botocore/data/pcs/2023-02-10/service-2.json), "+
			"e.g. %s=/path/to/pcs-service-2.json go test -tags apimodel ./pkg/lifecycle/ -run TestAPIModel", apiModelEnv, apiModelEnv)
	}
	if !filepath.IsAbs(p) {
		// go test runs in the package's folder; a relative path is the repository root's,
		// where .ci/run and make run.
		root, err := filepath.Abs(filepath.Join("..", ".."))
		require.NoError(t, err)
		p = filepath.Join(root, p)
	}
	data, err := os.ReadFile(p)
	require.NoError(t, err, "%s: a relative path is taken from the repository root", apiModelEnv)
	var raw struct {
		Shapes map[string]json.RawMessage `json:"shapes"`
	}
	require.NoError(t, json.Unmarshal(data, &raw), "%s: not a botocore service model", p)
	m := &apiModel{shapes: map[string]shape{}, re: map[string]*regexp.Regexp{}}
	for name, js := range raw.Shapes {
		var s shape
		require.NoError(t, json.Unmarshal(js, &s), "shape %s", name)
		var req struct {
			Required []string `json:"required"`
		}
		_ = json.Unmarshal(js, &req)
		s.Required = req.Required
		m.shapes[name] = s
	}
	require.Contains(t, m.shapes, "NodeLifecycleActions", "%s: the model has no NodeLifecycleActions shape", p)
	// The patterns of the shapes nodeLifecycleActions reaches (others use syntax RE2 lacks).
	var reach func(name string)
	reach = func(name string) {
		s := m.shapes[name]
		if _, done := m.re[name]; done {
			return
		}
		m.re[name] = nil
		if s.Pattern != "" {
			re, err := regexp.Compile(`^(?:` + ecmaToRE2(s.Pattern) + `)$`)
			require.NoError(t, err, "shape %s: pattern %q", name, s.Pattern)
			m.re[name] = re
		}
		for _, mem := range s.Members {
			reach(mem.Shape)
		}
		if s.Member != nil {
			reach(s.Member.Shape)
		}
	}
	reach("NodeLifecycleActions")
	return m
}

// ecmaToRE2 rewrites the ECMAScript classes whose meaning differs in Go's RE2: '.' (which in
// ECMAScript also excludes \r, U+2028 and U+2029) and \s (which in ECMAScript also holds
// Unicode spaces and U+FEFF). Patterns are taken as whole-string matches, as the service
// documents each field.
func ecmaToRE2(p string) string {
	const space = `\t\n\v\f\r \x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}\x{feff}`
	var b strings.Builder
	inClass := false
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '\\' && i+1 < len(p):
			n := p[i+1]
			i++
			switch {
			case n == 's' && inClass:
				b.WriteString(space)
			case n == 's':
				b.WriteString("[" + space + "]")
			default:
				b.WriteByte('\\')
				b.WriteByte(n)
			}
		case c == '[' && !inClass:
			inClass = true
			b.WriteByte(c)
		case c == ']' && inClass:
			inClass = false
			b.WriteByte(c)
		case c == '.' && !inClass:
			b.WriteString(`[^\n\r\x{2028}\x{2029}]`)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// accepts is the model's verdict on value v of shape name; why says what it refused.
func (m *apiModel) accepts(name string, v any) (bool, string) {
	s, ok := m.shapes[name]
	if !ok {
		return false, "no shape " + name
	}
	switch s.Type {
	case "structure":
		obj, ok := v.(map[string]any)
		if !ok {
			return false, name + ": not a structure"
		}
		for _, r := range s.Required {
			if _, ok := obj[r]; !ok {
				return false, name + "." + r + ": required"
			}
		}
		for k, x := range obj {
			mem, ok := s.Members[k]
			if !ok {
				return false, name + "." + k + ": unknown member"
			}
			if ok, why := m.accepts(mem.Shape, x); !ok {
				return false, why
			}
		}
		return true, ""
	case "list":
		list, ok := v.([]any)
		if !ok {
			return false, name + ": not a list"
		}
		if s.Min != nil && len(list) < *s.Min || s.Max != nil && len(list) > *s.Max {
			return false, fmt.Sprintf("%s: %d items", name, len(list))
		}
		for _, x := range list {
			if ok, why := m.accepts(s.Member.Shape, x); !ok {
				return false, why
			}
		}
		return true, ""
	case "string":
		str, ok := v.(string)
		if !ok {
			return false, name + ": not a string"
		}
		n := utf8.RuneCountInString(str) // botocore counts code points
		if s.Min != nil && n < *s.Min || s.Max != nil && n > *s.Max {
			return false, fmt.Sprintf("%s: length %d", name, n)
		}
		if len(s.Enum) > 0 {
			for _, e := range s.Enum {
				if e == str {
					return true, ""
				}
			}
			return false, name + ": not in the enum"
		}
		if re := m.re[name]; re != nil && !re.MatchString(str) {
			return false, name + ": does not match " + s.Pattern
		}
		return true, ""
	}
	return false, name + ": type " + s.Type + " not handled"
}

// generate walks the shapes from NodeLifecycleActions and makes cases at each constraint:
// every required and optional member removed, an unknown member, list sizes and string
// lengths around their limits, each enum value and near misses, and for each pattern a corpus
// of values around it.
func (m *apiModel) generate() []apiCase {
	var out []apiCase
	var walk func(name string, path []any, sample any)
	seen := map[string]bool{}
	walk = func(name string, path []any, sample any) {
		s := m.shapes[name]
		key := name + fmt.Sprint(len(path))
		if seen[key] && s.Type != "structure" {
			return
		}
		seen[key] = true
		label := name + " at " + pathString(path)
		switch s.Type {
		case "structure":
			obj, _ := sample.(map[string]any)
			out = append(out, apiCase{name: label + ": unknown member", path: append(clone(path), "unknownMember"), value: "x"})
			if len(s.Required) == 0 && len(path) > 0 {
				out = append(out, apiCase{name: label + ": no member at all", path: clone(path), value: map[string]any{}})
			}
			names := make([]string, 0, len(s.Members))
			for k := range s.Members {
				names = append(names, k)
			}
			sort.Strings(names)
			for _, k := range names {
				p := append(clone(path), k)
				out = append(out, apiCase{name: label + ": without " + k, path: p, del: true})
				out = append(out, apiCase{name: label + ": " + k + " a number", path: p, value: 7})
				walk(s.Members[k].Shape, p, obj[k])
			}
		case "list":
			list, _ := sample.([]any)
			for _, n := range around(s.Min, s.Max) {
				out = append(out, apiCase{name: fmt.Sprintf("%s: %d items", label, n), path: clone(path), value: grow(list, n)})
			}
			if len(list) > 0 {
				walk(s.Member.Shape, append(clone(path), 0), list[0])
			}
		case "string":
			str, _ := sample.(string)
			for _, e := range s.Enum {
				out = append(out, apiCase{name: label + ": " + e, path: clone(path), value: e})
				out = append(out, apiCase{name: label + ": " + strings.ToLower(e), path: clone(path), value: strings.ToLower(e)})
			}
			if len(s.Enum) > 0 {
				out = append(out, apiCase{name: label + ": empty", path: clone(path), value: ""})
				return
			}
			for _, n := range around(s.Min, s.Max) {
				out = append(out, apiCase{name: fmt.Sprintf("%s: length %d", label, n), path: clone(path), value: resize(str, n)})
			}
			if s.Pattern != "" {
				for i, v := range patternCorpus[name] {
					out = append(out, apiCase{name: fmt.Sprintf("%s: corpus %d %q", label, i, v), path: clone(path), value: v})
				}
			}
		}
	}
	walk("NodeLifecycleActions", nil, baseDocument())
	return out
}

// patternCorpus are values around each pattern of the nodeLifecycleActions shapes; the model
// decides which it accepts.
var patternCorpus = map[string][]string{
	"NodeLifecycleScriptNameString": {"a", "Z", "0", "a b", "a_b-c", "a ", " a", "-a", "_a", "a.b", "a/b", "a\tb", "é", "aé", "a\nb", "a:b", "a@b"},
	"ScriptSourceChecksumString": {
		strings.Repeat("a", 64), strings.Repeat("F", 64), strings.Repeat("0", 63) + "g", strings.Repeat("0", 63) + " ",
		"sha256:" + strings.Repeat("a", 57), strings.Repeat("é", 64),
	},
	"ScriptSourceScriptLocationString": {
		"s3://bucket/key", "s3://bucket/a/b/c.sh", "s3://b.u.c/k", "s3://a..b/k", "s3://192.168.1.1/k", "s3://bucket-/k", "s3://-bucket/k",
		"s3://Bucket/k", "s3://bu/k", "s3://" + strings.Repeat("b", 63) + "/k", "s3://" + strings.Repeat("b", 64) + "/k",
		"s3://bucket/", "s3://bucket", "s3://bucket//", "s3://bucket/a b", "s3://bucket/a\tb", "s3://bucket/a\nb", "s3://bucket/a\u2028b",
		"s3://bucket/a\x01b", "s3://bucket/é", "S3://bucket/k", "s3:/bucket/k",
		"https://example.com", "https://example.com/", "https://example.com/a.sh", "https://a.b.example.com/a?x=1#f",
		"https://example.com?x", "https://example.com#f", "https://example.com:1/a", "https://example.com:65535/a",
		"https://example.com:0/a", "https://example.com:99999/a", "https://example.com:123456/a", "https://example.com:/a",
		"https://example.c/a", "https://example.c0m/a", "https://example." + strings.Repeat("c", 63) + "/a", "https://example." + strings.Repeat("c", 64) + "/a",
		"https://localhost/a", "https://10.0.0.5/a", "https://[::1]/a", "https://mirror/a", "https://user@example.com/a",
		"https://-a.example.com/a", "https://a-.example.com/a", "https://a_b.example.com/a", "https://_a.example.com/a",
		"https://" + strings.Repeat("a", 63) + ".com/a", "https://" + strings.Repeat("a", 64) + ".com/a",
		"https://" + strings.Repeat(strings.Repeat("a", 60)+".", 5) + "com/a",
		"https://example.com/a b", "https://example.com/a\u00a0b", "https://example.com/a\u2003b", "https://example.com/a\x01b",
		"https://example.com/a%20b", "https://example.com/a%zzb", "https://example.com./a", "https://bücher.de/a", "https://xn--bcher-kva.de/a",
		"http://example.com/a", "HTTPS://example.com/a", "ftp://example.com/a", "file:///etc/passwd", "example.com/a",
	},
}

func pathString(p []any) string {
	var b strings.Builder
	for _, x := range p {
		switch x := x.(type) {
		case int:
			fmt.Fprintf(&b, "[%d]", x)
		default:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			fmt.Fprint(&b, x)
		}
	}
	if b.Len() == 0 {
		return "$"
	}
	return b.String()
}

func clone(p []any) []any { return append([]any{}, p...) }

// around are the sizes at and beside the limits (never negative).
func around(min, max *int) []int {
	var out []int
	add := func(n int) {
		if n >= 0 {
			out = append(out, n)
		}
	}
	if min != nil {
		add(*min - 1)
		add(*min)
	}
	if max != nil {
		add(*max)
		add(*max + 1)
	}
	return out
}

// grow makes a list of n items from the sample's first (scripts renamed to stay distinct).
func grow(sample []any, n int) []any {
	if len(sample) > 0 {
		if _, isScript := sample[0].(map[string]any); isScript {
			return scripts(n)
		}
	}
	out := make([]any, n)
	for i := range out {
		out[i] = "a"
		if len(sample) > 0 {
			out[i] = sample[0]
		}
	}
	return out
}

// resize makes a string of n characters from a sample: cut, or padded with its last one.
func resize(s string, n int) string {
	r := []rune(s)
	if len(r) >= n {
		return string(r[:n])
	}
	pad := 'a'
	if len(r) > 0 {
		pad = r[len(r)-1]
	}
	for len(r) < n {
		r = append(r, pad)
	}
	return string(r)
}

// TestAPIModel: the validator (API-strict) accepts exactly what the model accepts, on cases
// generated from the model, except the differences docs/decisions.md explains; and the
// hand-written copies run by make test still carry the model's verdict.
func TestAPIModel(t *testing.T) {
	m := loadModel(t)
	cases := m.generate()
	require.Greater(t, len(cases), 100, "cases generated from the model")
	agree, documented := 0, 0
	for _, c := range cases {
		doc := c.build()
		model, why := m.accepts("NodeLifecycleActions", doc)
		ours, ourWhy := accepts(t, doc)
		switch {
		case model == ours:
			agree++
		case exceptionFor(c, doc) != "":
			documented++
			t.Logf("differs as documented (%s): %s: model %v, validator %v", exceptionFor(c, doc), c.name, model, ours)
		default:
			t.Errorf("%s: the model says %v (%s); the validator says %v (%s)", c.name, model, why, ours, ourWhy)
		}
	}
	t.Logf("%d cases generated from the model: %d agree, %d differ as docs/decisions.md explains", len(cases), agree, documented)
	for _, c := range allHandCases() {
		model, why := m.accepts("NodeLifecycleActions", c.build())
		if model != c.model {
			t.Errorf("hand-written case %q says the model accepts it: %v; the model says %v (%s)", c.name, c.model, model, why)
		}
	}
}
