package cache

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/paths"
)

func digestOf(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// temps lists the temporary files in the scripts directory.
func temps(t *testing.T, l paths.Layout) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(l.ScriptsDir(), ".*.tmp-*"))
	require.NoError(t, err)
	return m
}

func TestPutScriptFromStreamsAndReplacesOnlyOnSuccess(t *testing.T) {
	l := paths.New(t.TempDir())
	c := New(l)
	old := []byte("#!/bin/sh\necho old\n")
	p, d, err := c.PutScript("s", old)
	require.NoError(t, err)
	assert.Equal(t, digestOf(old), d)

	// A fill that fails half-way (a download cut short, after a reset) leaves the old copy
	// byte for byte, and no temporary file.
	boom := errors.New("connection reset")
	_, _, err = c.PutScriptFrom("s", func(w Temp) (string, error) {
		_, _ = w.Write([]byte("#!/bin/sh\necho par"))
		// While it is written, nothing new is visible under the name.
		got, rerr := os.ReadFile(p)
		require.NoError(t, rerr)
		assert.Equal(t, old, got)
		assert.Len(t, temps(t, l), 1)
		return "", boom
	})
	require.ErrorIs(t, err, boom)
	got, err := os.ReadFile(p)
	require.NoError(t, err)
	assert.Equal(t, old, got)
	assert.Empty(t, temps(t, l))

	// A fill whose first attempt fails and second succeeds: Reset drops the first's bytes.
	want := bytes.Repeat([]byte("#!/bin/sh\n: new\n"), 1000)
	_, d, err = c.PutScriptFrom("s", func(w Temp) (string, error) {
		_, _ = w.Write([]byte("garbage from a failed attempt"))
		require.NoError(t, w.Reset())
		for i := 0; i < len(want); i += 4096 {
			_, err := w.Write(want[i:min(i+4096, len(want))])
			require.NoError(t, err)
		}
		return digestOf(want), nil
	})
	require.NoError(t, err)
	assert.Equal(t, digestOf(want), d)
	got, err = os.ReadFile(p)
	require.NoError(t, err)
	assert.Equal(t, want, got)
	fi, err := os.Stat(p)
	require.NoError(t, err)
	assert.Equal(t, ScriptMode, fi.Mode().Perm())
	assert.Empty(t, temps(t, l))
}

func TestPutScriptFromRemovesAKilledWritersTemps(t *testing.T) {
	l := paths.New(t.TempDir())
	c := New(l)
	_, _, err := c.PutScript("s", []byte("x"))
	require.NoError(t, err)
	stale := filepath.Join(l.ScriptsDir(), ".s.tmp-123")
	require.NoError(t, os.WriteFile(stale, []byte("half"), 0o700))
	_, _, err = c.PutScript("s", []byte("y"))
	require.NoError(t, err)
	assert.NoFileExists(t, stale)
}

func TestVerify(t *testing.T) {
	l := paths.New(t.TempDir())
	c := New(l)
	big := append([]byte("#!/bin/sh\n"), bytes.Repeat([]byte("# padding\n"), 200_000)...)
	p, d, err := c.PutScript("big", big)
	require.NoError(t, err)

	got, head, err := c.Verify("big", d)
	require.NoError(t, err)
	assert.Equal(t, p, got)
	assert.Equal(t, big[:HeadSize], head, "only the head is returned, never the whole script")

	_, _, err = c.PutScript("tiny", []byte("#!"))
	require.NoError(t, err)
	_, head, err = c.Verify("tiny", digestOf([]byte("#!")))
	require.NoError(t, err)
	assert.Equal(t, []byte("#!"), head)

	var te *TamperedError
	_, _, err = c.Verify("big", digestOf([]byte("other")))
	require.ErrorAs(t, err, &te)
	assert.Contains(t, te.Reason, "content changed on disk")

	_, _, err = c.Verify("big", "")
	require.ErrorAs(t, err, &te)

	require.NoError(t, os.Chmod(p, 0o722))
	_, _, err = c.Verify("big", d)
	require.ErrorAs(t, err, &te)
	assert.Contains(t, te.Reason, "writable")

	_, _, err = c.Verify("missing", d)
	assert.ErrorIs(t, err, os.ErrNotExist)
}
