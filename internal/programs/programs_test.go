package programs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLook(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "tool")
	require.NoError(t, os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755))
	plain := filepath.Join(dir, "plain")
	require.NoError(t, os.WriteFile(plain, nil, 0o644))

	p, err := Look("tool", "relative:"+dir)
	require.NoError(t, err)
	require.Equal(t, exe, p)

	_, err = Look("tool", "relative")
	require.True(t, errors.Is(err, fs.ErrNotExist), "a relative PATH entry is never used: %v", err)
	_, err = Look("plain", dir)
	require.Error(t, err, "not executable")
	_, err = Look(plain, "")
	require.ErrorContains(t, err, "not an executable file")
	p, err = Look(exe, "")
	require.NoError(t, err)
	require.Equal(t, exe, p)
}

func TestScriptPATHIsTheSpecs(t *testing.T) {
	require.Equal(t, "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", ScriptPATH)
	require.Equal(t, ScriptPATH+":/opt/slurm/bin", SlurmPATH)
}
