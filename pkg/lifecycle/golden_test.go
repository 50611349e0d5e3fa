package lifecycle

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGolden parses every testdata/documents/*.json in the default and the API-strict mode and
// compares the listing with testdata/golden/<name>.golden. UPDATE_GOLDEN=1 rewrites the files.
func TestGolden(t *testing.T) {
	update := os.Getenv("UPDATE_GOLDEN") == "1"
	files, err := filepath.Glob(filepath.Join("testdata", "documents", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(f)
			require.NoError(t, err)
			got := listing(data, Options{}, "default") + "\n" + listing(data, Options{APIStrict: true}, "api-strict")
			golden := filepath.Join("testdata", "golden", name+".golden")
			if update {
				require.NoError(t, os.WriteFile(golden, []byte(got), 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err, "run UPDATE_GOLDEN=1 go test ./pkg/lifecycle/ to create it")
			assert.Equal(t, string(want), got)
		})
	}
}

// listing renders what `validate` would show: the verdict, the errors, then the warnings.
func listing(data []byte, opts Options, mode string) string {
	var b strings.Builder
	d, err := Decode(data, opts)
	doc, warns := d.Document, d.Warnings
	b.WriteString("# " + mode + "\n")
	b.WriteString("form: " + string(d.Form) + "\n")
	if err != nil {
		b.WriteString("invalid\n")
		for _, p := range err.(*ValidationError).Problems {
			b.WriteString("error   " + p.String() + "\n")
		}
	} else {
		b.WriteString("valid\n")
	}
	for _, p := range warns {
		b.WriteString("warning " + p.String() + "\n")
	}
	if doc != nil {
		b.WriteString(string(doc.Marshal()) + "\n")
	}
	return b.String()
}
