// Package packaging_test proves the .deb and the .rpm that `make package` builds: the .deb is
// installed on this machine with dpkg, upgraded over an older build while a node's state is
// kept, removed and purged; the .rpm is listed and installed, upgraded and erased in a scratch
// root. `make package-test` builds both versions and runs it (as root); elsewhere it is skipped,
// since it changes the machine it runs on (and puts it back as it was).
package packaging_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/testenv"
)

const (
	pkgName = "pcs-lifecycle"
	binary  = "/usr/bin/pcs-lifecycle"
	// The folders of the node's state, cache and logs, and the modes the executor gives them.
	stateDir = "/var/lib/amazon/pcs/lifecycle"
	cacheDir = "/etc/amazon/pcs/lifecycle/actions/config"
	logDir   = "/var/log/amazon/pcs/lifecycle/actions"
	// The drop-in as the daemon mode turns it on (docs/install.md): a link to the packaged copy.
	dropInLink   = "/etc/systemd/system/slurmd.service.d/10-pcs-lifecycle.conf"
	dropInShared = "/usr/share/pcs-lifecycle/slurmd.service.d/10-pcs-lifecycle.conf"
	installHint  = "apt-get install -y dpkg rpm man-db bash-completion systemd"
	lockFile     = "/run/lock/pcs-lifecycle-package-test.lock"
	// markerFile exists while TestDeb has the machine changed (what to undo).
	markerFile = "/var/tmp/pcs-lifecycle-package-test.json"
)

// The trees outside the package that the test leaves behind by design (state, cache, logs) and
// removes at the end; each must be absent before, so that no real node's files are touched.
var nodeTrees = []string{"/var/lib/amazon/pcs", "/etc/amazon/pcs", "/var/log/amazon/pcs"}

// Every file and folder of the package and its mode (all owned by root:root).
var files = map[string]os.FileMode{
	binary: 0o755,
	"/usr/lib/systemd/system/pcs-lifecycle.service":              0o644,
	"/usr/lib/systemd/system/pcs-lifecycle-bootstrapped.service": 0o644,
	"/usr/lib/systemd/system/pcs-lifecycle-ready.service":        0o644,
	"/usr/lib/systemd/system-preset/90-pcs-lifecycle.preset":     0o644,
	dropInShared: 0o644,
	"/usr/share/pcs-lifecycle/slurm-prolog.sh":                      0o755,
	"/usr/share/pcs-lifecycle/examples/node-lifecycle-actions.json": 0o644,
	"/usr/share/man/man1/pcs-lifecycle.1.gz":                        0o644,
	"/usr/share/man/man1/pcs-lifecycle-run.1.gz":                    0o644,
	"/usr/share/man/man1/pcs-lifecycle-status.1.gz":                 0o644,
	"/usr/share/bash-completion/completions/pcs-lifecycle":          0o644,
	"/usr/share/fish/vendor_completions.d/pcs-lifecycle.fish":       0o644,
	"/usr/share/doc/pcs-lifecycle/README.md":                        0o644,
	stateDir:                                                        os.ModeDir | 0o700,
	cacheDir:                                                        os.ModeDir | 0o700,
	filepath.Join(cacheDir, "scripts"):                              os.ModeDir | 0o700,
	logDir:                                                          os.ModeDir | 0o750,
}

// Files only one of the two packages has.
var (
	debOnly = map[string]os.FileMode{
		"/etc/default/pcs-lifecycle":                       0o644,
		"/usr/share/zsh/vendor-completions/_pcs-lifecycle": 0o644,
	}
	rpmOnly = map[string]os.FileMode{
		"/etc/sysconfig/pcs-lifecycle":                 0o644,
		"/usr/share/zsh/site-functions/_pcs-lifecycle": 0o644,
	}
)

// build is one build of the packages: its folder, the two files and the version.
type build struct {
	deb, rpm, version string
}

func findBuild(t *testing.T, dir string) build {
	t.Helper()
	var b build
	for _, p := range []struct {
		ext string
		out *string
	}{{"deb", &b.deb}, {"rpm", &b.rpm}} {
		m, err := filepath.Glob(filepath.Join(dir, pkgName+"?*."+p.ext))
		require.NoError(t, err)
		require.Len(t, m, 1, "one .%s in %s (make package)", p.ext, dir)
		*p.out = m[0]
	}
	b.version = strings.TrimSpace(mustRun(t, "dpkg-deb", "-f", b.deb, "Version"))
	require.NotEmpty(t, b.version)
	return b
}

// builds returns the current and the older build, or skips the test outside make package-test.
func builds(t *testing.T) (cur, older build) {
	t.Helper()
	dist, old := os.Getenv("PCS_PACKAGE_DIST"), os.Getenv("PCS_PACKAGE_OLDER")
	if dist == "" || old == "" {
		t.Skip("run by `make package-test` (it installs the .deb on this machine, as root)")
	}
	for _, tool := range []string{"dpkg", "dpkg-deb", "dpkg-query", "rpm", "man", "systemd-analyze", "bash", "ldd"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not found: install it with `%s` (or run scripts/test-deps.sh)", tool, installHint)
		}
	}
	if !exists("/usr/share/bash-completion/bash_completion") {
		t.Fatalf("bash-completion is not installed: install it with `%s`", installHint)
	}
	cur, older = findBuild(t, dist), findBuild(t, old)
	require.NotEqual(t, cur.version, older.version)
	// dpkg must agree that the older build is older.
	_, err := run(t, nil, "dpkg", "--compare-versions", older.version, "lt", cur.version)
	require.NoError(t, err, "%s sorts before %s", older.version, cur.version)
	return cur, older
}

// run runs a command with stdin from /dev/null and returns its combined output.
func run(t *testing.T, env []string, name string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func mustRun(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := run(t, nil, name, args...)
	require.NoError(t, err, "%s %s:\n%s", name, strings.Join(args, " "), out)
	return out
}

func isLink(p string) bool {
	fi, err := os.Lstat(p)
	return err == nil && fi.Mode()&os.ModeSymlink != 0
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// requireFiles checks each path's type, mode and root ownership under root ("" for /).
func requireFiles(t *testing.T, root string, want map[string]os.FileMode) {
	t.Helper()
	for p, mode := range want {
		fi, err := os.Lstat(filepath.Join(root, p))
		require.NoError(t, err, "%s is installed", p)
		require.Equal(t, mode.IsDir(), fi.IsDir(), "%s: folder or file", p)
		require.Equal(t, mode.Perm(), fi.Mode().Perm(), "%s: mode %o", p, fi.Mode().Perm())
		st := fi.Sys().(*syscall.Stat_t)
		require.Equal(t, [2]uint32{0, 0}, [2]uint32{st.Uid, st.Gid}, "%s: owned by root:root", p)
	}
}

// dpkgStatus is dpkg's status of the package ("" when dpkg does not know it).
func dpkgStatus(t *testing.T) string {
	out, err := run(t, nil, "dpkg-query", "-W", "-f", "${Status}", pkgName)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(out)
}

// restore is what the machine was like before TestDeb, kept in markerFile while the test runs.
type restore struct {
	DropInDirExisted bool     // /etc/systemd/system/slurmd.service.d was there
	Created          []string // parents of nodeTrees that were not (such as /var/lib/amazon)
}

// undo purges the package, removes the node's files and the drop-in link, and the marker.
func (r restore) undo(t *testing.T) {
	if s := dpkgStatus(t); s != "" && !strings.HasSuffix(s, "not-installed") {
		out, err := run(t, nil, "dpkg", "--purge", pkgName)
		if err != nil {
			t.Errorf("cleanup: dpkg --purge: %v\n%s", err, out)
			return
		}
	}
	_ = os.Remove(dropInLink)
	if !r.DropInDirExisted {
		_ = os.Remove(filepath.Dir(dropInLink))
	}
	for _, p := range nodeTrees {
		_ = os.RemoveAll(p)
	}
	for _, d := range r.Created {
		_ = os.Remove(d) // only when empty: something else may have put files there since
	}
	_ = os.Remove(markerFile)
}

// lockMachine serialises the test between worktrees sharing this machine.
func lockMachine(t *testing.T) {
	t.Helper()
	f, err := os.OpenFile(lockFile, os.O_CREATE|os.O_RDWR, 0o644)
	require.NoError(t, err)
	require.NoError(t, syscall.Flock(int(f.Fd()), syscall.LOCK_EX))
	t.Cleanup(func() { f.Close() })
}

// TestDeb installs the older .deb, runs a stage, upgrades to the current .deb, checks what is
// installed, removes and purges, and puts the machine back as it was.
func TestDeb(t *testing.T) {
	cur, older := builds(t)
	require.Equal(t, 0, os.Geteuid(), "dpkg -i needs root: run make package-test as root")
	lockMachine(t)

	// A run that died before its cleanup (a go test timeout runs none) left its marker: put
	// the machine back first, as that run would have.
	if m, err := os.ReadFile(markerFile); err == nil {
		var prev restore
		require.NoError(t, json.Unmarshal(m, &prev), "%s", markerFile)
		t.Logf("an earlier run did not clean up (%s): cleaning up after it", markerFile)
		prev.undo(t)
	}

	// The machine must not hold the package nor a node's files: the test would change them.
	st := dpkgStatus(t)
	require.True(t, st == "" || strings.HasPrefix(st, "unknown ") || strings.HasSuffix(st, "not-installed"),
		"pcs-lifecycle is on this machine already (%s); the test installs and removes it: `dpkg -P pcs-lifecycle` first", st)
	for _, p := range append([]string{binary, dropInLink}, nodeTrees...) {
		require.False(t, exists(p), "%s exists on this machine; the test would change it: remove it first", p)
	}
	r := restore{DropInDirExisted: exists(filepath.Dir(dropInLink))}
	for _, p := range nodeTrees {
		if d := filepath.Dir(p); !exists(d) {
			r.Created = append(r.Created, d)
		}
	}
	marker, merr := json.Marshal(r)
	require.NoError(t, merr)
	require.NoError(t, os.WriteFile(markerFile, marker, 0o644))
	t.Cleanup(func() { r.undo(t) })

	// A lifecycle script served over HTTPS by a server with its own CA.
	srv := testenv.StartTLS(t, testenv.NewFiles(map[string][]byte{
		"/hello.sh": []byte("#!/bin/sh\necho \"hello from $PCS_NODE_ID, first boot $PCS_IS_FIRST_BOOT\"\n"),
	}))
	cfg := filepath.Join(t.TempDir(), "config.json")
	require.NoError(t, os.WriteFile(cfg, []byte(fmt.Sprintf(`{"stages": {"nodeBootstrapped": [
		{"name": "hello", "scriptSource": {"scriptLocation": %q}, "executionPolicy": "EVERY_BOOT"}]}}`,
		srv.URL+"/hello.sh")), 0o644))
	node := []string{"--node-id", "pkgtest", "--instance-id", "i-0packagetest0001", "--boot-id", "package-test-boot-1"}
	pcs := func(args ...string) (string, error) {
		return run(t, []string{"SSL_CERT_FILE=" + srv.CAFile, "AWS_EC2_METADATA_DISABLED=true"}, binary, append(args, node...)...)
	}

	t.Log("install the older build")
	mustRun(t, "dpkg", "--install", older.deb)
	require.Equal(t, "install ok installed", dpkgStatus(t))
	out := mustRun(t, binary, "version")
	require.Contains(t, out, older.version)
	requireFiles(t, "", files)
	requireFiles(t, "", debOnly)

	t.Log("a node's first boot under the older build, and an administrator's setting")
	out, err := pcs("run", "--stage", "nodeBootstrapped", "--config", cfg)
	require.NoError(t, err, "run:\n%s", out)
	before, err := pcs("status")
	require.NoError(t, err, "status:\n%s", before)
	require.Contains(t, before, "hello")
	stateBefore, err := os.ReadFile(filepath.Join(stateDir, "state.json"))
	require.NoError(t, err)
	const setting = "PCS_LIFECYCLE_OPTIONS=--log-level debug\n"
	f, err := os.OpenFile("/etc/default/pcs-lifecycle", os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(setting)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	t.Log("upgrade to the current build")
	mustRun(t, "dpkg", "--install", cur.deb)
	require.Equal(t, "install ok installed", dpkgStatus(t))
	require.Equal(t, cur.version, strings.TrimSpace(mustRun(t, "dpkg-query", "-W", "-f", "${Version}", pkgName)))
	require.Contains(t, mustRun(t, binary, "version"), cur.version)
	after, err := pcs("status")
	require.NoError(t, err, "status:\n%s", after)
	require.Equal(t, before, after, "status is the same after the upgrade")
	stateAfter, err := os.ReadFile(filepath.Join(stateDir, "state.json"))
	require.NoError(t, err)
	require.Equal(t, stateBefore, stateAfter, "the upgrade did not touch state.json")
	env, err := os.ReadFile("/etc/default/pcs-lifecycle")
	require.NoError(t, err)
	require.True(t, strings.HasSuffix(string(env), setting), "the upgrade kept the administrator's /etc/default/pcs-lifecycle:\n%s", env)

	t.Log("what is installed")
	requireFiles(t, "", files)
	requireFiles(t, "", debOnly)
	listed := mustRun(t, "dpkg", "--listfiles", pkgName)
	for p := range files {
		require.Contains(t, listed, p+"\n", "dpkg -L lists %s", p)
	}
	require.Equal(t, "/etc/default/pcs-lifecycle", strings.TrimSpace(strings.Fields(mustRun(t, "dpkg-query", "-W", "-f", "${Conffiles}", pkgName))[0]),
		"/etc/default/pcs-lifecycle is the package's configuration file")
	// The man pages, through man itself.
	for _, page := range []string{"pcs-lifecycle", "pcs-lifecycle-run"} {
		out, err := run(t, []string{"MANPAGER=cat", "MANWIDTH=100"}, "man", page)
		require.NoError(t, err, "man %s:\n%s", page, out)
		require.Contains(t, out, "PCS-LIFECYCLE", "man %s", page)
		require.Contains(t, out, "--root", "man %s shows the global flags", page)
	}
	// The bash completion loads as bash-completion loads it, and completes a command name by
	// asking the binary.
	comp := `source /usr/share/bash-completion/bash_completion
_completion_loader pcs-lifecycle
complete -p pcs-lifecycle
COMP_LINE="pcs-lifecycle sta"; COMP_POINT=${#COMP_LINE}; COMP_WORDS=(pcs-lifecycle sta); COMP_CWORD=1
__start_pcs-lifecycle pcs-lifecycle sta pcs-lifecycle
printf 'reply:%s\n' "${COMPREPLY[@]}"`
	out, err = run(t, nil, "bash", "--norc", "--noprofile", "-c", comp)
	require.NoError(t, err, "bash completion:\n%s", out)
	require.Contains(t, out, "complete -o default -F __start_pcs-lifecycle pcs-lifecycle")
	require.Contains(t, out, "reply:status")
	// The installed units, as systemd reads them.
	units, err := filepath.Glob("/usr/lib/systemd/system/pcs-lifecycle*.service")
	require.NoError(t, err)
	require.Len(t, units, 3)
	out, err = run(t, []string{"SYSTEMD_LOG_LEVEL=warning"}, "systemd-analyze", append([]string{"verify"}, units...)...)
	require.NoError(t, err, "systemd-analyze verify:\n%s", out)
	require.NotContains(t, out, "pcs-lifecycle", "systemd-analyze verify has something to say about our units:\n%s", out)
	// The example configuration is valid.
	out, err = run(t, nil, binary, "validate", "/usr/share/pcs-lifecycle/examples/node-lifecycle-actions.json")
	require.NoError(t, err, "validate the example:\n%s", out)
	// Installing never starts or enables a unit where systemd is not running.
	if !exists("/run/systemd/system") {
		links, _ := filepath.Glob("/etc/systemd/system/*/pcs-lifecycle*")
		require.Empty(t, links, "no unit enabled on an install without a running systemd")
	}

	t.Log("daemon mode's drop-in, turned on as docs/install.md says")
	if !r.DropInDirExisted {
		require.NoError(t, os.MkdirAll(filepath.Dir(dropInLink), 0o755))
	}
	require.NoError(t, os.Symlink(dropInShared, dropInLink))
	verifySlurmd := func() {
		t.Helper()
		out, err := run(t, []string{"SYSTEMD_LOG_LEVEL=warning"}, "systemd-analyze", "verify", "slurmd.service")
		require.NoError(t, err, "systemd-analyze verify slurmd.service (with the drop-in link):\n%s", out)
	}
	verifySlurmd() // the drop-in's Requires=pcs-lifecycle.service is met

	t.Log("remove: the program goes, configuration, state, cache and logs stay")
	mustRun(t, "dpkg", "--remove", pkgName)
	require.Equal(t, "deinstall ok config-files", dpkgStatus(t))
	for _, p := range []string{binary, "/usr/lib/systemd/system/pcs-lifecycle.service", "/usr/share/man/man1/pcs-lifecycle.1.gz", dropInShared} {
		require.False(t, exists(p), "%s removed", p)
	}
	requireKept := func() {
		t.Helper()
		got, err := os.ReadFile(filepath.Join(stateDir, "state.json"))
		require.NoError(t, err, "state kept")
		require.Equal(t, stateAfter, got)
		require.FileExists(t, filepath.Join(cacheDir, "scripts", "hello"), "cache kept")
		require.FileExists(t, filepath.Join(cacheDir, "node-lifecycle-actions.json"), "cached configuration kept")
		require.FileExists(t, filepath.Join(logDir, "nodeBootstrapped", "hello.log"), "logs kept")
		require.FileExists(t, filepath.Join(logDir, "executor.log"), "logs kept")
		requireFiles(t, "", map[string]os.FileMode{stateDir: os.ModeDir | 0o700, cacheDir: os.ModeDir | 0o700, logDir: os.ModeDir | 0o750})
	}
	requireKept()
	require.FileExists(t, "/etc/default/pcs-lifecycle", "remove keeps the configuration")
	require.True(t, exists(dropInLink) || isLink(dropInLink), "remove keeps the drop-in link")
	// The link points to nothing now and systemd skips it: slurmd does not require a unit that
	// is gone (a copied drop-in would keep slurmd from starting).
	verifySlurmd()

	t.Log("purge: the configuration goes, state, cache and logs stay")
	mustRun(t, "dpkg", "--purge", pkgName)
	require.Equal(t, "", strings.TrimSuffix(strings.TrimSuffix(dpkgStatus(t), "not-installed"), "unknown ok "),
		"dpkg forgot the package")
	require.False(t, exists("/etc/default/pcs-lifecycle"), "purge removes /etc/default/pcs-lifecycle")
	require.False(t, exists(dropInLink), "purge removes the link to the removed drop-in")
	requireKept()
}

// TestRPM lists the .rpm, then installs the older build into a scratch root, upgrades it to the
// current one and erases it, with its scriptlets run by the scratch root's own /bin/sh.
func TestRPM(t *testing.T) {
	cur, older := builds(t)
	require.Equal(t, 0, os.Geteuid(), "rpm --root runs its scriptlets in a chroot: run make package-test as root")

	listed := mustRun(t, "rpm", "-qlp", cur.rpm)
	for p := range files {
		require.Contains(t, listed, p+"\n", "rpm -qlp lists %s", p)
	}
	for p := range rpmOnly {
		require.Contains(t, listed, p+"\n", "rpm -qlp lists %s", p)
	}
	for p := range debOnly {
		require.NotContains(t, listed, p+"\n", "%s is the .deb's", p)
	}
	require.Equal(t, "/etc/sysconfig/pcs-lifecycle\n", mustRun(t, "rpm", "-qp", "--configfiles", cur.rpm))
	require.Equal(t, cur.version, mustRun(t, "rpm", "-qp", "--queryformat", "%{VERSION}", cur.rpm))

	root := t.TempDir()
	shellInto(t, root)
	rpm := func(args ...string) string {
		t.Helper()
		// Debian's rpm refuses to install without --force-debian (it points to alien); the
		// scratch root is not Debian's.
		return mustRun(t, "rpm", append([]string{"--root", root, "--force-debian"}, args...)...)
	}
	mustRun(t, "rpm", "--root", root, "--initdb")
	rpm("-i", "--nodeps", older.rpm)
	requireFiles(t, root, files)
	requireFiles(t, root, rpmOnly)
	out := mustRun(t, filepath.Join(root, binary), "version")
	require.Contains(t, out, older.version)
	require.NoDirExists(t, filepath.Join(root, "etc/systemd/system"), "no unit enabled without a running systemd")

	// A node's state and an administrator's setting, then the upgrade.
	state := filepath.Join(root, stateDir, "state.json")
	require.NoError(t, os.WriteFile(state, []byte(`{"version":1}`), 0o600))
	sysconfig := filepath.Join(root, "etc/sysconfig/pcs-lifecycle")
	f, err := os.OpenFile(sysconfig, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString("PCS_CLUSTER_NAME=admin-set\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())

	rpm("-U", "--nodeps", cur.rpm)
	require.Equal(t, cur.version, rpm("-q", "--queryformat", "%{VERSION}", pkgName))
	require.Contains(t, mustRun(t, filepath.Join(root, binary), "version"), cur.version)
	got, err := os.ReadFile(sysconfig)
	require.NoError(t, err)
	require.Contains(t, string(got), "PCS_CLUSTER_NAME=admin-set\n", "the upgrade kept /etc/sysconfig/pcs-lifecycle")
	require.FileExists(t, state)
	requireFiles(t, root, files)

	// Daemon mode turned on as docs/install.md says (the links `systemctl enable` makes).
	wants := filepath.Join(root, "etc/systemd/system/multi-user.target.wants/pcs-lifecycle.service")
	link := filepath.Join(root, dropInLink)
	for _, d := range []string{filepath.Dir(wants), filepath.Dir(link)} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	require.NoError(t, os.Symlink("/usr/lib/systemd/system/pcs-lifecycle.service", wants))
	require.NoError(t, os.Symlink(dropInShared, link))

	rpm("-e", pkgName)
	require.NoFileExists(t, filepath.Join(root, binary))
	require.False(t, isLink(wants), "erase removes the enablement link")
	require.False(t, isLink(link), "erase removes the drop-in link")
	require.FileExists(t, state, "erase keeps the state")
	require.FileExists(t, sysconfig+".rpmsave", "erase keeps the changed configuration as .rpmsave")
}

// shellInto copies /bin/sh, rm and rmdir with the libraries they load into root, for rpm's
// scriptlets (as the smallest system they run on: no systemctl, no running systemd).
func shellInto(t *testing.T, root string) {
	t.Helper()
	for _, tool := range []string{"/bin/sh", "/bin/rm", "/bin/rmdir"} {
		real, err := filepath.EvalSymlinks(tool)
		require.NoError(t, err)
		paths := []string{real}
		out := mustRun(t, "ldd", real)
		for _, l := range strings.Split(out, "\n") {
			for _, f := range strings.Fields(l) {
				if strings.HasPrefix(f, "/") {
					paths = append(paths, f)
				}
			}
		}
		for _, p := range paths {
			data, err := os.ReadFile(p)
			require.NoError(t, err)
			dst := filepath.Join(root, p)
			require.NoError(t, os.MkdirAll(filepath.Dir(dst), 0o755))
			require.NoError(t, os.WriteFile(dst, data, 0o755))
		}
		if dst := filepath.Join(root, tool); real != tool && !exists(dst) {
			require.NoError(t, os.MkdirAll(filepath.Dir(dst), 0o755))
			require.NoError(t, os.Symlink(real, dst))
		}
	}
}
