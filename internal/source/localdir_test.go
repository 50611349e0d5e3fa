package source

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pcs-lifecycle/pcs-lifecycle/pkg/lifecycle"
)

func TestLocalDirCandidates(t *testing.T) {
	dir := "/d"
	cases := []struct {
		loc  string
		want []string
	}{
		{"s3://bucket/lifecycle/setup.sh", []string{"/d/lifecycle/setup.sh", "/d/setup.sh"}},
		{"s3://bucket/setup.sh", []string{"/d/setup.sh"}},
		{"s3://bucket/path with spaces/a b.sh", []string{"/d/path with spaces/a b.sh", "/d/a b.sh"}},
		{"https://scripts.example.com/pcs/ready.sh?ref=main#x", []string{"/d/pcs/ready.sh", "/d/ready.sh"}},
		{"https://scripts.example.com:8443/ready%20now.sh", []string{"/d/ready now.sh"}},
		{"s3://bucket/../../etc/passwd", []string{"/d/etc/passwd", "/d/passwd"}}, // cleaned against the folder, never above it
		{"https://scripts.example.com/", nil},
		{"s3://bucket", nil},
		{"file:///etc/passwd", nil},
	}
	for _, tc := range cases {
		t.Run(tc.loc, func(t *testing.T) {
			assert.Equal(t, tc.want, Candidates(dir, tc.loc))
		})
	}
}

func TestLocalDirFetch(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "lifecycle"), 0o755))
	nested := []byte("#!/bin/sh\necho nested\n")
	flat := []byte("#!/bin/sh\necho flat\n")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "lifecycle", "a.sh"), nested, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.sh"), flat, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "b.sh"), flat, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "big.sh"), []byte(strings.Repeat("x", 101)), 0o644))
	sum := func(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }
	l := LocalDir{Dir: dir, MaxSize: 100}
	ctx := context.Background()

	res, p, err := l.FetchPath(ctx, lifecycle.ScriptSource{ScriptLocation: "s3://bucket/lifecycle/a.sh", Checksum: strings.ToUpper(sum(nested))})
	require.NoError(t, err)
	assert.Equal(t, nested, res.Data, "the path after the bucket wins over the file name")
	assert.Equal(t, filepath.Join(dir, "lifecycle", "a.sh"), p)
	assert.Equal(t, sum(nested), res.SHA256)

	res, err = l.Fetch(ctx, lifecycle.ScriptSource{ScriptLocation: "https://mirror.example.com/other/place/b.sh"})
	require.NoError(t, err)
	assert.Equal(t, flat, res.Data, "else the file name")

	_, err = l.Fetch(ctx, lifecycle.ScriptSource{ScriptLocation: "s3://bucket/lifecycle/a.sh", Checksum: sum(flat)})
	require.Error(t, err)
	assert.Equal(t, ChecksumMismatch, KindOf(err))
	assert.Contains(t, err.Error(), filepath.Join(dir, "lifecycle", "a.sh"))

	_, err = l.Fetch(ctx, lifecycle.ScriptSource{ScriptLocation: "s3://bucket/x/missing.sh"})
	require.Error(t, err)
	assert.Equal(t, NotFound, KindOf(err))
	assert.Contains(t, err.Error(), "s3://bucket/x/missing.sh")
	assert.Contains(t, err.Error(), filepath.Join(dir, "x", "missing.sh")+" and "+filepath.Join(dir, "missing.sh"))

	_, err = l.Fetch(ctx, lifecycle.ScriptSource{ScriptLocation: "s3://bucket/big.sh"})
	assert.Equal(t, TooLarge, KindOf(err))

	require.NoError(t, os.Mkdir(filepath.Join(dir, "adir.sh"), 0o755))
	_, err = l.Fetch(ctx, lifecycle.ScriptSource{ScriptLocation: "s3://bucket/adir.sh"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not a regular file")

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = l.Fetch(cctx, lifecycle.ScriptSource{ScriptLocation: "s3://bucket/b.sh"})
	assert.Equal(t, Canceled, KindOf(err))
}
