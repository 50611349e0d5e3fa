package lifecycle

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParse: Parse never panics; a rejected document has problems with a path and a message;
// an accepted one marshals to a document that Parse accepts again, equal, with the same
// canonical bytes and the same warnings (paths relative to the unwrapped object).
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "documents", "*.json"))
	for _, name := range files {
		if data, err := os.ReadFile(name); err == nil {
			f.Add(data, false)
			f.Add(data, true)
		}
	}
	f.Add([]byte(withFields(`,"arguments":["a","\u0000"]`)), false)
	f.Add([]byte(`{"nodeLifecycleActions":`+withLocation("https://[::1]:1/x?Signature=1&Expires=2")+`}`), false)

	f.Fuzz(func(t *testing.T, data []byte, strict bool) {
		opts := Options{APIStrict: strict}
		doc, warns, err := Parse(data, opts)
		for _, w := range warns {
			if w.Path == "" || w.Message == "" {
				t.Fatalf("empty warning %+v", w)
			}
		}
		if err != nil {
			ve, ok := err.(*ValidationError)
			if !ok || len(ve.Problems) == 0 || doc != nil {
				t.Fatalf("err %T %v with doc %v", err, err, doc)
			}
			for _, p := range ve.Problems {
				if p.Path == "" || p.Message == "" {
					t.Fatalf("empty problem %+v", p)
				}
			}
			return
		}
		if doc == nil {
			t.Fatal("nil document without error")
		}
		out := doc.Marshal()
		again, warns2, err := Parse(out, opts)
		if err != nil {
			t.Fatalf("marshalled document rejected: %v\n%s", err, out)
		}
		if string(again.Marshal()) != string(out) {
			t.Fatalf("marshal not stable:\n%s\n%s", out, again.Marshal())
		}
		if !equalDocuments(doc, again) {
			t.Fatalf("round trip changed the document:\n%#v\n%#v", doc, again)
		}
		if len(warns) != len(warns2) {
			t.Fatalf("warnings changed: %v → %v", warns, warns2)
		}
		for i := range warns {
			p := strings.TrimPrefix(warns[i].Path, wrapperKey+".")
			if p != warns2[i].Path || warns[i].Message != warns2[i].Message {
				t.Fatalf("warning changed: %v → %v", warns[i], warns2[i])
			}
		}
	})
}

func equalDocuments(a, b *Document) bool {
	if a.ScriptCachingPolicy != b.ScriptCachingPolicy {
		return false
	}
	for _, st := range Stages {
		sa, sb := a.Scripts(st), b.Scripts(st)
		if len(sa) != len(sb) || (sa == nil) != (sb == nil) {
			return false
		}
		for i := range sa {
			x, y := sa[i], sb[i]
			if x.Name != y.Name || x.ScriptSource != y.ScriptSource || x.ExecutionPolicy != y.ExecutionPolicy ||
				x.OnError != y.OnError || len(x.Arguments) != len(y.Arguments) || x.Arguments == nil || y.Arguments == nil {
				return false
			}
			for j := range x.Arguments {
				if x.Arguments[j] != y.Arguments[j] {
					return false
				}
			}
		}
	}
	return true
}
