package e2e_test

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTry: try runs an unchanged two-stage document on a sandbox node with its scripts taken
// from a local folder, and replays two boots: the first runs every script, the second only
// the EVERY_BOOT ones, from the cache; logs and status are printed for each boot, and it says
// the scripts run on this machine.
func TestTry(t *testing.T) {
	t.Parallel()
	n := newNode(t)
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "lifecycle"), 0o755))
	setup := []byte("#!/bin/sh\necho \"setup $1 first=$PCS_IS_FIRST_BOOT node=$PCS_NODE_ID\"\n")
	ready := []byte("echo \"ready stage=$PCS_LIFECYCLE_STAGE first=$PCS_IS_FIRST_BOOT\"\n") // no #!: /bin/sh
	require.NoError(t, os.WriteFile(filepath.Join(dir, "lifecycle", "setup.sh"), setup, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ready.sh"), ready, 0o644))
	sum := sha256.Sum256(setup)
	d := stages(
		[]scriptDef{script("setup-once", "s3://hpc-admin/lifecycle/setup.sh").args("once").checksum(hex.EncodeToString(sum[:])).onErr("CONTINUE")},
		[]scriptDef{script("ready-every", "https://scripts.example.com/pcs/ready.sh?ref=main").every().onErr("CONTINUE")})
	cfg := n.writeConfig(d)

	r := n.runArgv([]string{"try", cfg, "--scripts-from", dir, "--boots", "2"})
	require.Equal(t, 0, r.code, "%s", r)
	require.Contains(t, r.stderr, "THE SCRIPTS RUN ON THIS MACHINE AS ")
	boots := strings.Split(r.stdout, "\n=== boot ")
	require.Len(t, boots, 3, "a header per boot:\n%s", r.stdout)
	first, second := boots[1], boots[2]

	require.Contains(t, first, "1 of 2 (try-boot-1, the instance's first boot")
	require.Contains(t, first, "s3://hpc-admin/lifecycle/setup.sh  <-  "+filepath.Join(dir, "lifecycle", "setup.sh"))
	require.Contains(t, first, "https://scripts.example.com/pcs/ready.sh?ref=main  <-  "+filepath.Join(dir, "ready.sh"))
	require.Contains(t, first, "setup once first=1 node=try-node-1")
	require.Contains(t, first, "ready stage=nodeReady first=1")
	require.Contains(t, first, "--- status")

	require.Contains(t, second, "2 of 2 (try-boot-2, a reboot")
	require.Contains(t, second, "no script read from the folder this boot", "CACHE_ONCE: the reboot uses the cached copies")
	require.Contains(t, second, "--- nodeBootstrapped/setup-once: did not run this boot")
	require.NotContains(t, second, "setup once")
	require.Contains(t, second, "ready stage=nodeReady first=0")
	require.Regexp(t, `(?m)^\s*setup-once\b.*\bskipped\b`, second)

	t.Run("the sandbox is removed unless kept", func(t *testing.T) {
		re := regexp.MustCompile(`sandbox node (\S+) `)
		m := re.FindStringSubmatch(r.stderr)
		require.Len(t, m, 2, "%s", r.stderr)
		require.NoDirExists(t, filepath.Dir(m[1]))

		k := n.with(t).runArgv([]string{"try", cfg, "--scripts-from", dir, "--keep"})
		require.Equal(t, 0, k.code, "%s", k)
		m = re.FindStringSubmatch(k.stderr)
		require.Len(t, m, 2, "%s", k.stderr)
		t.Cleanup(func() { os.RemoveAll(filepath.Dir(m[1])) })
		require.Contains(t, k.stderr, "the sandbox is kept at "+filepath.Dir(m[1]))
		require.FileExists(t, filepath.Join(m[1], "var/log/amazon/pcs/lifecycle/actions/nodeReady/ready-every.log"))
	})
	t.Run("the checksum is still checked", func(t *testing.T) {
		bad := stages([]scriptDef{script("setup", "s3://hpc-admin/lifecycle/setup.sh").checksum(strings.Repeat("0", 64))}, nil)
		r := n.with(t).runArgv([]string{"try", n.writeConfig(bad), "--scripts-from", dir})
		require.Equal(t, 4, r.code, "TERMINATE by default:\n%s", r)
		require.Contains(t, r.stdout+r.stderr, "checksum mismatch")
		require.Contains(t, r.stdout, "TERMINATE (nodeBootstrapped/setup) marks the instance failed")
	})
	t.Run("a script missing from the folder names where it was looked for", func(t *testing.T) {
		missing := stages([]scriptDef{script("gone", "s3://hpc-admin/lifecycle/gone.sh").onErr("CONTINUE")}, nil)
		r := n.with(t).runArgv([]string{"try", n.writeConfig(missing), "--scripts-from", dir, "--stage", bootstrapped})
		require.Equal(t, 3, r.code, "%s", r)
		require.Contains(t, r.stderr, filepath.Join(dir, "lifecycle", "gone.sh")+" and "+filepath.Join(dir, "gone.sh"))
	})
	t.Run("an invalid document runs nothing", func(t *testing.T) {
		p := n.writeFile("invalid.json", []byte(`{"stages": {"nodeReady": [{"name": "x", "scriptSource": {"scriptLocation": "s3://hpc-admin/x.sh"}, "onError": "STOP"}]}}`))
		r := n.with(t).runArgv([]string{"try", p, "--scripts-from", dir})
		require.Equal(t, 2, r.code, "%s", r)
		require.Contains(t, r.stdout, `got "STOP" (did you mean "STOP_SEQUENCE"?)`)
		require.NotContains(t, r.stdout, "=== boot")
	})
	t.Run("usage", func(t *testing.T) {
		for _, argv := range [][]string{
			{"try", cfg},
			{"try", cfg, "--scripts-from", filepath.Join(dir, "nope")},
			{"try", cfg, "--scripts-from", dir, "--boots", "0"},
			{"try", cfg, "--scripts-from", dir, "--stage", "nodeStarted"},
			{"try", cfg, "--scripts-from", dir, "--root", n.root},
		} {
			r := n.with(t).runArgv(argv)
			require.Equal(t, 2, r.code, "%v: %s", argv, r)
		}
	})
}
