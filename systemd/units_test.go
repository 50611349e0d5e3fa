package systemd_test

// Checks of the unit files in this directory: systemd-analyze verify on every unit (with the
// drop-in loaded), the preset through systemctl --root, the exit-code/ordering contract, a
// comment above every ordering line, and golden files of their directives.

import (
	"bufio"
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const installHint = "apt-get install -y systemd"

var (
	services = []string{"pcs-lifecycle.service", "pcs-lifecycle-bootstrapped.service", "pcs-lifecycle-ready.service"}
	dropIn   = filepath.Join("slurmd.service.d", "10-pcs-lifecycle.conf")
	preset   = "90-pcs-lifecycle.preset"
	allFiles = append(append([]string(nil), services...), dropIn, preset)
)

// The binary the units run; verify needs ExecStart to exist, so the test rewrites it.
const execPath = "/usr/bin/pcs-lifecycle"

var update = flag.Bool("update", os.Getenv("UPDATE_GOLDEN") == "1", "rewrite testdata/*.golden")

func tool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		for _, d := range []string{"/usr/bin", "/bin"} {
			if _, err := os.Stat(filepath.Join(d, name)); err == nil {
				return filepath.Join(d, name)
			}
		}
		t.Fatalf("%s not found: install it with `%s`", name, installHint)
	}
	return p
}

// stage copies the units into dir with ExecStart's binary replaced by a stub that exists,
// plus a stub slurmd.service for the drop-in to attach to. It returns the units' paths.
func stage(t *testing.T, dir string, edit func(name string, data []byte) []byte) []string {
	t.Helper()
	stub := filepath.Join(dir, "bin", "pcs-lifecycle")
	require.NoError(t, os.MkdirAll(filepath.Dir(stub), 0o755))
	require.NoError(t, os.WriteFile(stub, []byte("#!/bin/sh\nexit 0\n"), 0o755))
	var paths []string
	for _, f := range append(append([]string(nil), services...), dropIn) {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		data = bytes.ReplaceAll(data, []byte(execPath), []byte(stub))
		if edit != nil {
			data = edit(f, data)
		}
		dst := filepath.Join(dir, f)
		require.NoError(t, os.MkdirAll(filepath.Dir(dst), 0o755))
		require.NoError(t, os.WriteFile(dst, data, 0o644))
		if f != dropIn {
			paths = append(paths, dst)
		}
	}
	slurmd := filepath.Join(dir, "slurmd.service")
	require.NoError(t, os.WriteFile(slurmd, []byte("[Unit]\nDescription=stub slurmd\n\n[Service]\nExecStart="+stub+"\n\n[Install]\nWantedBy=multi-user.target\n"), 0o644))
	return append(paths, slurmd) // slurmd.service last: verifying it loads the drop-in
}

// verify runs systemd-analyze verify on the units and returns what it printed and whether it
// exited 0.
func verify(t *testing.T, units []string) (string, bool) {
	t.Helper()
	cmd := exec.Command(tool(t, "systemd-analyze"), append([]string{"verify", "--man=no"}, units...)...)
	cmd.Env = append(os.Environ(), "SYSTEMD_LOG_LEVEL=notice", "SYSTEMD_PAGER=", "LC_ALL=C")
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err == nil
}

func TestSystemdAnalyzeVerify(t *testing.T) {
	dir := t.TempDir()
	units := stage(t, dir, nil)
	out, ok := verify(t, units)
	assert.True(t, ok, "systemd-analyze verify failed:\n%s", out)
	// A warning (an unknown key, a bad value) does not change verify's exit status: any line
	// about our units fails the test.
	for _, l := range strings.Split(out, "\n") {
		if l == "" {
			continue
		}
		if strings.Contains(l, dir) || strings.Contains(l, "pcs-lifecycle") || strings.Contains(l, "slurmd") {
			t.Errorf("systemd-analyze verify: %s", l)
		} else {
			t.Logf("systemd-analyze verify (not about our units): %s", l)
		}
	}
}

// TestSystemdAnalyzeVerifyCatchesMistakes shows that the check above would see a mistake, in a
// unit and in the drop-in.
func TestSystemdAnalyzeVerifyCatchesMistakes(t *testing.T) {
	for _, tc := range []struct {
		file, bad, want string
	}{
		{"pcs-lifecycle.service", "Type=notify\n", "Failed to parse service type"},
		{dropIn, "After=pcs-lifecycle.service\n", "Unknown key"},
		{"pcs-lifecycle-ready.service", "SuccessExitStatus=3 143\n", "Failed to parse value, ignoring: three"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			dir := t.TempDir()
			units := stage(t, dir, func(name string, data []byte) []byte {
				if name != tc.file {
					return data
				}
				repl := map[string]string{
					"Type=notify\n":                 "Type=notfy\n",
					"After=pcs-lifecycle.service\n": "Afterr=pcs-lifecycle.service\n",
					"SuccessExitStatus=3 143\n":     "SuccessExitStatus=three 143\n",
				}[tc.bad]
				require.Contains(t, string(data), tc.bad)
				return bytes.Replace(data, []byte(tc.bad), []byte(repl), 1)
			})
			out, _ := verify(t, units)
			assert.Contains(t, out, tc.want)
		})
	}
}

// unit is a parsed unit file: section → key → values in order.
type unit map[string]map[string][]string

func parseUnit(t *testing.T, name string) unit {
	t.Helper()
	data, err := os.ReadFile(name)
	require.NoError(t, err)
	u := unit{}
	sec := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		switch {
		case l == "" || strings.HasPrefix(l, "#") || strings.HasPrefix(l, ";"):
		case strings.HasPrefix(l, "[") && strings.HasSuffix(l, "]"):
			sec = l[1 : len(l)-1]
			if u[sec] == nil {
				u[sec] = map[string][]string{}
			}
		default:
			k, v, ok := strings.Cut(l, "=")
			require.True(t, ok, "%s: %q is not key=value", name, l)
			require.NotEmpty(t, sec, "%s: %q outside a section", name, l)
			u[sec][k] = append(u[sec][k], v)
		}
	}
	return u
}

// TestContract pins what the rest of the project relies on: which unit orders itself against
// slurmd and how, and which exit codes count as success.
func TestContract(t *testing.T) {
	d := parseUnit(t, "pcs-lifecycle.service")
	assert.Equal(t, []string{"notify"}, d["Service"]["Type"])
	assert.Equal(t, []string{"main"}, d["Service"]["NotifyAccess"])
	assert.Equal(t, []string{execPath + " daemon $PCS_LIFECYCLE_OPTIONS"}, d["Service"]["ExecStart"])
	assert.Contains(t, d["Unit"]["Before"], "slurmd.service")
	assert.NotContains(t, d["Unit"]["After"], "cloud-final.service", "cloud-final may wait for slurmd: deadlock")

	b := parseUnit(t, "pcs-lifecycle-bootstrapped.service")
	assert.Equal(t, []string{"oneshot"}, b["Service"]["Type"])
	assert.Equal(t, []string{execPath + " run --stage nodeBootstrapped $PCS_LIFECYCLE_OPTIONS"}, b["Service"]["ExecStart"])
	assert.Contains(t, b["Unit"]["Before"], "slurmd.service")
	assert.Equal(t, []string{"slurmd.service"}, b["Install"]["RequiredBy"])

	r := parseUnit(t, "pcs-lifecycle-ready.service")
	assert.Equal(t, []string{"oneshot"}, r["Service"]["Type"])
	assert.Equal(t, []string{execPath + " run --stage nodeReady $PCS_LIFECYCLE_OPTIONS"}, r["Service"]["ExecStart"])
	assert.Contains(t, r["Unit"]["After"], "slurmd.service")
	assert.NotContains(t, r["Unit"]["Before"], "slurmd.service")
	assert.Empty(t, r["Unit"]["Requires"], "nodeReady failing must not stop anything")
	assert.Equal(t, []string{"slurmd.service"}, r["Install"]["WantedBy"])

	for name, u := range map[string]unit{"pcs-lifecycle.service": d, "pcs-lifecycle-bootstrapped.service": b, "pcs-lifecycle-ready.service": r} {
		// Exit 3 (CONTINUE/STOP_SEQUENCE failures) and 143 (stopped by SIGTERM) are success for
		// systemd; 4 (TERMINATE) is not.
		assert.Equal(t, []string{"3 143"}, u["Service"]["SuccessExitStatus"], name)
		assert.Equal(t, []string{"yes"}, u["Service"]["RemainAfterExit"], name)
		assert.Equal(t, []string{"mixed"}, u["Service"]["KillMode"], name)
		assert.Equal(t, []string{"-/etc/sysconfig/pcs-lifecycle", "-/etc/default/pcs-lifecycle"}, u["Service"]["EnvironmentFile"], name)
	}

	in := parseUnit(t, dropIn)
	assert.Equal(t, []string{"pcs-lifecycle.service"}, in["Unit"]["Requires"], "a failed start (TERMINATE) keeps slurmd down")
	assert.Equal(t, []string{"pcs-lifecycle.service"}, in["Unit"]["After"], "slurmd waits for READY=1")
	assert.Len(t, in, 1, "the drop-in has only [Unit]")
}

var orderingKeys = []string{"After", "Before", "Requires", "Requisite", "Wants", "BindsTo", "PartOf", "Upholds", "Conflicts", "WantedBy", "RequiredBy", "UpheldBy"}

// TestOrderingLinesCommented: every ordering or dependency line has a comment right above it,
// or follows such a line directly (a commented group like Wants= + After=).
func TestOrderingLinesCommented(t *testing.T) {
	for _, f := range append(append([]string(nil), services...), dropIn) {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		prev := "" // "comment", "ordering" (itself commented), or ""
		for i, l := range strings.Split(string(data), "\n") {
			l = strings.TrimSpace(l)
			switch {
			case strings.HasPrefix(l, "#"):
				prev = "comment"
			case isOrdering(l):
				if prev == "" {
					t.Errorf("%s:%d: %q has no comment saying why", f, i+1, l)
				}
				prev = "ordering"
			default:
				prev = ""
			}
		}
	}
}

func isOrdering(line string) bool {
	k, _, ok := strings.Cut(line, "=")
	if !ok {
		return false
	}
	for _, o := range orderingKeys {
		if k == o {
			return true
		}
	}
	return false
}

// TestPreset applies the preset to an image root with systemctl --root: daemon mode enabled,
// the per-stage units not; enabling those wires them to slurmd.
func TestPreset(t *testing.T) {
	systemctl := tool(t, "systemctl")
	root := t.TempDir()
	sysDir := filepath.Join(root, "usr/lib/systemd/system")
	presetDir := filepath.Join(root, "usr/lib/systemd/system-preset")
	require.NoError(t, os.MkdirAll(sysDir, 0o755))
	require.NoError(t, os.MkdirAll(presetDir, 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "etc/systemd/system"), 0o755))
	for _, s := range services {
		data, err := os.ReadFile(s)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(sysDir, s), data, 0o644))
	}
	for _, u := range []string{"slurmd.service", "multi-user.target"} {
		require.NoError(t, os.WriteFile(filepath.Join(sysDir, u), []byte("[Unit]\nDescription=stub\n"), 0o644))
	}
	data, err := os.ReadFile(preset)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(presetDir, preset), data, 0o644))

	run := func(args ...string) {
		t.Helper()
		out, err := exec.Command(systemctl, append([]string{"--root=" + root, "--no-reload"}, args...)...).CombinedOutput()
		require.NoError(t, err, "systemctl %s: %s", strings.Join(args, " "), out)
	}
	links := func() []string {
		var out []string
		_ = filepath.Walk(filepath.Join(root, "etc/systemd/system"), func(p string, fi os.FileInfo, err error) error {
			if err == nil && fi.Mode()&os.ModeSymlink != 0 {
				rel, _ := filepath.Rel(filepath.Join(root, "etc/systemd/system"), p)
				out = append(out, rel)
			}
			return nil
		})
		sort.Strings(out)
		return out
	}
	run(append([]string{"preset"}, services...)...)
	assert.Equal(t, []string{"multi-user.target.wants/pcs-lifecycle.service"}, links())

	run("disable", "pcs-lifecycle.service")
	run("enable", "pcs-lifecycle-bootstrapped.service", "pcs-lifecycle-ready.service")
	assert.Equal(t, []string{
		"slurmd.service.requires/pcs-lifecycle-bootstrapped.service",
		"slurmd.service.wants/pcs-lifecycle-ready.service",
	}, links())
}

// directives is a file without its comments and blank lines: what systemd reads.
func directives(data []byte) []byte {
	var b bytes.Buffer
	for _, l := range strings.Split(string(data), "\n") {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "#") || strings.HasPrefix(t, ";") {
			continue
		}
		b.WriteString(t + "\n")
	}
	return b.Bytes()
}

// TestGolden compares what systemd reads of each file (comments and blank lines dropped) with
// testdata/*.golden, so that a change of behaviour shows up as a reviewed golden diff while
// comments can be edited freely. UPDATE_GOLDEN=1 rewrites them.
func TestGolden(t *testing.T) {
	for _, f := range allFiles {
		t.Run(f, func(t *testing.T) {
			data, err := os.ReadFile(f)
			require.NoError(t, err)
			got := directives(data)
			golden := filepath.Join("testdata", strings.ReplaceAll(f, string(filepath.Separator), "_")+".golden")
			if *update {
				require.NoError(t, os.WriteFile(golden, got, 0o644))
				return
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err, "run with UPDATE_GOLDEN=1 to create it")
			assert.Equal(t, string(want), string(got), "%s differs from %s (UPDATE_GOLDEN=1 to accept)", f, golden)
		})
	}
}
