package main

import (
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/cli"
)

// TestGenerate: one man page per command (a command added later gets one without a change
// here), stamped with the version and date given; the three completions; the same bytes twice.
func TestGenerate(t *testing.T) {
	when := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	out := t.TempDir()
	require.NoError(t, generate(out, "1.2.3+git4.abc1234", when))

	var walk func(c *cobra.Command)
	var names []string
	walk = func(c *cobra.Command) {
		if !c.IsAvailableCommand() && c.Parent() != nil {
			return
		}
		names = append(names, strings.ReplaceAll(c.CommandPath(), " ", "-"))
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(cli.NewRoot())
	require.Contains(t, names, "pcs-lifecycle-run")
	for _, n := range names {
		page := readGzip(t, filepath.Join(out, "man", n+".1.gz"))
		require.Contains(t, page, `.TH "PCS-LIFECYCLE" "1" "Nov 2026" "pcs-lifecycle 1.2.3+git4.abc1234"`, n)
		require.NotContains(t, page, "Auto generated", n)
	}
	for _, f := range []string{"pcs-lifecycle.bash", "_pcs-lifecycle", "pcs-lifecycle.fish"} {
		b, err := os.ReadFile(filepath.Join(out, "completions", f))
		require.NoError(t, err)
		require.Contains(t, string(b), "__complete", f)
		require.Contains(t, string(b), "pcs-lifecycle", f)
	}

	again := t.TempDir()
	require.NoError(t, generate(again, "1.2.3+git4.abc1234", when))
	for _, n := range names {
		a, err := os.ReadFile(filepath.Join(out, "man", n+".1.gz"))
		require.NoError(t, err)
		b, err := os.ReadFile(filepath.Join(again, "man", n+".1.gz"))
		require.NoError(t, err)
		require.Equal(t, a, b, "%s is reproducible", n)
	}
}

func readGzip(t *testing.T, p string) string {
	t.Helper()
	f, err := os.Open(p)
	require.NoError(t, err, "man page %s", filepath.Base(p))
	defer f.Close()
	zr, err := gzip.NewReader(f)
	require.NoError(t, err)
	b, err := io.ReadAll(zr)
	require.NoError(t, err)
	return string(b)
}
