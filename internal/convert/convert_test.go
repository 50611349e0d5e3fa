package convert

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pcs-lifecycle/pcs-lifecycle/pkg/lifecycle"
)

// golden compares got with testdata/golden/name; UPDATE_GOLDEN=1 rewrites it.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	p := filepath.Join("testdata", "golden", name)
	if os.Getenv("UPDATE_GOLDEN") == "1" {
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, got, 0o644))
	}
	want, err := os.ReadFile(p)
	require.NoError(t, err, "run UPDATE_GOLDEN=1 go test ./internal/convert/ to create it")
	assert.Equal(t, string(want), string(got))
}

func read(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return data
}

// valid requires a converted document to pass validate as it is, in the API-strict mode.
func valid(t *testing.T, d *Document) {
	t.Helper()
	_, err := lifecycle.Decode(d.JSON, lifecycle.Options{APIStrict: true})
	require.NoError(t, err, "%s", d.JSON)
}

func problemsOf(t *testing.T, err error) []string {
	t.Helper()
	require.Error(t, err)
	var e *Error
	require.ErrorAs(t, err, &e)
	return e.Problems
}
