// Package nspawn boots a real systemd in a throwaway container for black-box tests of the
// project's units and packages (internal/systemdtest).
//
// The container changes nothing on the host. A private mount namespace (unshare --mount
// --propagation private) holds an overlayfs whose lower layer is the host's / and whose upper
// layer is a tmpfs (an upper directory on the host's disk would overlap / and is refused). In
// it the container has its own /etc/systemd/system: a default target, the units under test,
// and every unit of the host masked but the few a boot needs (journald, the shutdown
// services); a new machine-id; a private tmpfs on /run/systemd; its own copy of the package
// database's files (dpkg in the container works while the host's changes). Note that
// systemd-nspawn mounts a fresh /tmp in the container: files for it go elsewhere (Files,
// Binds). systemd-nspawn boots it with
// --boot --register=no --keep-unit --link-journal=no --console=read-only, sharing the host's
// network, so servers on the host's loopback are reachable from inside. Everything is
// queried through `nsenter -t <the container's PID 1> -a` (systemctl, journalctl), and the
// container is powered off at the end, or killed on any other way out.
package nspawn

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/notify/notifytest"
)

// Install is the command that installs systemd-nspawn (Debian, Ubuntu). Without
// --no-install-recommends apt also adds libnss-mymachines to the host's nsswitch.conf.
const Install = "apt-get install -y --no-install-recommends systemd-container"

// ownerMarker is set in every container's PID 1 environment (--setenv) with the test process's
// PID as value, so that a later run can kill a container whose test process died without
// cleaning up (a go test -timeout panic runs no cleanup).
const ownerMarker = "PCS_NSPAWN_OWNER"

// keep are the host's units a container boot needs unmasked: the journal (the tests read it)
// and what `systemctl poweroff` runs.
var keep = []string{
	"systemd-journald.service", "systemd-journald.socket", "systemd-journald-dev-log.socket",
	"systemd-journald-audit.socket", "systemd-journal-flush.service",
	"systemd-poweroff.service", "systemd-halt.service", "systemd-reboot.service", "systemd-exit.service",
}

// unitDirs are the host's unit folders whose units are masked in the container.
var unitDirs = []string{"/etc/systemd/system", "/usr/lib/systemd/system", "/lib/systemd/system"}

// unitSuffixes are the unit types masked (targets and slices are kept: they run nothing).
var unitSuffixes = []string{".service", ".socket", ".timer", ".path", ".mount", ".automount", ".swap"}

// File is a file placed in the container's root before it boots.
type File struct {
	Path string      // absolute path in the container
	Data []byte      // its content, or
	Src  string      // a host file copied
	Mode os.FileMode // 0644 when zero
}

// Spec is what a container holds beyond the host's own files.
type Spec struct {
	// DefaultTarget is the unit the container boots to; "multi-user.target" when empty.
	DefaultTarget string
	// Units are written under the container's /etc/systemd/system: name → content. A name may
	// hold a folder, as "slurmd.service.d/20-test.conf".
	Units map[string]string
	// Files are placed in the root (after Units).
	Files []File
	// Keep are more host units left unmasked (such as slurmd.service), besides the units
	// named in Units and those a boot needs.
	Keep []string
	// Setup are shell commands run (as root, on the host, in the container's mount namespace)
	// after the files are in place and before the boot, with $ROOT the container's root: for
	// `chroot "$ROOT" dpkg -i ...` and `systemctl --root="$ROOT" preset ...`.
	Setup []string
	// Binds are host folders bound into the container (systemd-nspawn --bind=): "DIR" at the
	// same path, or "HOST:CONTAINER". Use one for state that must outlive a boot.
	Binds []string
}

// Container is a running container.
type Container struct {
	// Leader is the container's PID 1 (systemd) as the host sees it.
	Leader int
	// Prepared is how long the root took to prepare (overlay, files, Setup commands);
	// Booted how long from then (systemd-nspawn's start) until the container's systemd
	// answered on its private socket.
	Prepared, Booted time.Duration

	t       testing.TB
	cmd     *exec.Cmd
	exited  chan struct{}
	waitErr error
	output  *bytes.Buffer
	notify  *notifytest.Socket
	work    string
	started time.Time
}

// Check fails the test, with the command that installs it, when a tool the containers need is
// missing or the process is not root.
func Check(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatalf("nspawn: booting a container needs root (run the tests as root)")
	}
	for _, tool := range []string{"systemd-nspawn", "unshare", "nsenter", "systemctl"} {
		if _, err := exec.LookPath(tool); err != nil {
			hint := Install
			if tool != "systemd-nspawn" {
				hint = "apt-get install -y util-linux systemd"
			}
			t.Fatalf("nspawn: %s not found: install it with `%s`", tool, hint)
		}
	}
}

// bootScript runs in the private mount namespace: the overlay, the container's own files, the
// setup commands, then systemd-nspawn (exec: the process the test waits for).
const bootScript = `set -eu
work=$1; prep=$2; cgroup=$3; shift 3
mount -t tmpfs -o mode=0755 pcs-nspawn "$work/layer"
mkdir "$work/layer/upper" "$work/layer/work"
mount -t overlay pcs-nspawn -o "lowerdir=/,upperdir=$work/layer/upper,workdir=$work/layer/work" "$work/root"
ROOT=$work/root
export ROOT
rm -rf "$ROOT/etc/systemd/system"
cp -a "$prep/." "$ROOT/"
mount -t tmpfs -o mode=0755 pcs-nspawn "$ROOT/run/systemd"
# The package database's own files are copied into the root: the host's dpkg may rewrite them
# meanwhile, and a lower-layer file changed under the overlay makes dpkg in the container fail
# with "Stale file handle".
if [ -d /var/lib/dpkg ]; then
	for f in /var/lib/dpkg/*; do if [ -f "$f" ]; then cp -a "$f" "$ROOT$f"; fi; done
	for d in updates triggers; do if [ -d "/var/lib/dpkg/$d" ]; then cp -a "/var/lib/dpkg/$d" "$ROOT/var/lib/dpkg/"; fi; done
fi
sh -eu "$work/setup.sh"
# A cgroup of its own in every systemd hierarchy: without a host systemd, --keep-unit leaves
# systemd-nspawn in this process's cgroup, where it makes payload/ for the container, and
# containers started side by side would share payload/system.slice/<unit> (one's stop of a
# unit killed the other's). The Go side removes these after the container.
for h in /sys/fs/cgroup/systemd /sys/fs/cgroup/unified /sys/fs/cgroup; do
	if [ -f "$h/cgroup.procs" ] && { [ "$h" != /sys/fs/cgroup ] || [ -f "$h/cgroup.controllers" ]; }; then
		mkdir -p "$h/$cgroup"
		echo $$ >"$h/$cgroup/cgroup.procs"
	fi
done
date +%s%N >"$work/nspawn-started"
exec systemd-nspawn -D "$ROOT" "$@"
`

// Boot prepares a root from spec and boots it, returning once the container's systemd answers
// on its private socket (the boot's units may still be starting: wait for them with
// WaitSystem or WaitUnit). The container is killed when the test ends if it still runs.
func Boot(ctx context.Context, t testing.TB, spec Spec) *Container {
	t.Helper()
	Check(t)
	killOrphans()
	work, err := os.MkdirTemp("", "pcs-nspawn-")
	if err != nil {
		t.Fatalf("nspawn: %v", err)
	}
	c := &Container{t: t, work: work, exited: make(chan struct{}), output: &bytes.Buffer{}}
	t.Cleanup(c.cleanup)
	if err := os.WriteFile(filepath.Join(work, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		t.Fatalf("nspawn: %v", err)
	}
	prep := filepath.Join(work, "prep")
	for _, d := range []string{"layer", "root", prep} {
		if err := os.MkdirAll(filepath.Join(work, d), 0o755); err != nil {
			t.Fatalf("nspawn: %v", err)
		}
	}
	if err := prepare(prep, spec); err != nil {
		t.Fatalf("nspawn: prepare the container's files: %v", err)
	}
	if err := os.WriteFile(filepath.Join(work, "setup.sh"), []byte(strings.Join(spec.Setup, "\n")+"\n"), 0o644); err != nil {
		t.Fatalf("nspawn: %v", err)
	}

	c.notify = notifytest.Listen(t)
	args := []string{"--mount", "--propagation", "private", "--", "sh", "-c", bootScript, "sh", work, prep, c.cgroupName(),
		"--boot", "--register=no", "--keep-unit", "--link-journal=no", "--console=read-only",
		"--notify-ready=yes", "--setenv=" + ownerMarker + "=" + strconv.Itoa(os.Getpid())}
	for _, b := range spec.Binds {
		args = append(args, "--bind="+b)
	}
	c.cmd = exec.Command("unshare", args...)
	c.cmd.Env = append(cleanEnv(), "NOTIFY_SOCKET="+c.notify.Path)
	c.cmd.Stdout = c.output
	c.cmd.Stderr = c.output
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.started = time.Now()
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("nspawn: start systemd-nspawn: %v", err)
	}
	go func() {
		c.waitErr = c.cmd.Wait()
		close(c.exited)
	}()

	// systemd-nspawn names the container's PID 1 on its notification socket.
	line, err := c.waitNotify(ctx, "X_NSPAWN_LEADER_PID=")
	if err != nil {
		t.Fatalf("nspawn: the container did not start: %v\n%s", err, c.Output())
	}
	c.Leader, err = strconv.Atoi(strings.TrimPrefix(line, "X_NSPAWN_LEADER_PID="))
	if err != nil {
		t.Fatalf("nspawn: %q: %v", line, err)
	}
	// systemctl answers once PID 1 listens on its private socket; systemd creates it before it
	// starts any unit. Polled: the socket's appearance has no event the host can wait on.
	sock := filepath.Join("/proc", strconv.Itoa(c.Leader), "root", "run/systemd/private")
	if err := c.poll(ctx, func() bool { _, err := os.Stat(sock); return err == nil }); err != nil {
		t.Fatalf("nspawn: the container's systemd did not come up: %v\n%s", err, c.Output())
	}
	c.Booted = time.Since(c.started)
	if b, err := os.ReadFile(filepath.Join(work, "nspawn-started")); err == nil {
		if ns, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil {
			at := time.Unix(0, ns)
			c.Prepared, c.Booted = at.Sub(c.started), time.Since(at)
		}
	}
	return c
}

// prepare writes what the container holds of its own into dir (copied over the overlay's
// root): /etc/systemd/system with the masks, the default target and the units; a machine-id;
// the files.
func prepare(dir string, spec Spec) error {
	if err := writeUnits(filepath.Join(dir, "etc/systemd/system"), spec); err != nil {
		return err
	}
	id, err := machineID()
	if err != nil {
		return err
	}
	return writeFiles(dir, append([]File{{Path: "/etc/machine-id", Data: []byte(id + "\n"), Mode: 0o444}}, spec.Files...))
}

// writeUnits fills the container's /etc/systemd/system: the default target, a mask for every
// unit of the host but those kept, and the units of the spec.
func writeUnits(sys string, spec Spec) error {
	if err := os.MkdirAll(sys, 0o755); err != nil {
		return err
	}
	target := spec.DefaultTarget
	if target == "" {
		target = "multi-user.target"
	}
	if err := os.Symlink("/lib/systemd/system/"+target, filepath.Join(sys, "default.target")); err != nil {
		return err
	}
	unmasked := map[string]bool{}
	for _, u := range append(append([]string(nil), keep...), spec.Keep...) {
		unmasked[u] = true
	}
	for name := range spec.Units {
		unmasked[strings.SplitN(name, "/", 2)[0]] = true
	}
	masked := map[string]bool{}
	for _, d := range unitDirs {
		ents, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		for _, e := range ents {
			n := e.Name()
			if e.IsDir() || unmasked[n] || masked[n] || !hasUnitSuffix(n) {
				continue
			}
			masked[n] = true
			if err := os.Symlink("/dev/null", filepath.Join(sys, n)); err != nil {
				return err
			}
		}
	}
	names := make([]string, 0, len(spec.Units))
	for n := range spec.Units {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := filepath.Join(sys, n)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(spec.Units[n]), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// writeFiles places files under dir, each at its absolute path in the container.
func writeFiles(dir string, files []File) error {
	for _, f := range files {
		if !filepath.IsAbs(f.Path) {
			return fmt.Errorf("%s: not an absolute path", f.Path)
		}
		data := f.Data
		if f.Src != "" {
			var err error
			if data, err = os.ReadFile(f.Src); err != nil {
				return err
			}
		}
		mode := f.Mode
		if mode == 0 {
			mode = 0o644
		}
		p := filepath.Join(dir, f.Path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, data, mode); err != nil {
			return err
		}
		if err := os.Chmod(p, mode); err != nil {
			return err
		}
	}
	return nil
}

func hasUnitSuffix(name string) bool {
	for _, s := range unitSuffixes {
		if strings.HasSuffix(name, s) {
			return true
		}
	}
	return false
}

// machineID is a new random machine ID (32 hex digits).
func machineID() (string, error) {
	b, err := os.ReadFile("/proc/sys/kernel/random/uuid")
	if err != nil {
		return "", err
	}
	return strings.ReplaceAll(strings.TrimSpace(string(b)), "-", ""), nil
}

// cleanEnv is the environment of every command run in or for the container: nothing of the
// test process's (NOTIFY_SOCKET, SLURM_CONF, proxies) leaks in.
func cleanEnv() []string {
	return []string{
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"LANG=C.UTF-8", "SYSTEMD_PAGER=", "SYSTEMD_COLORS=0", "SYSTEMD_LOG_COLOR=0",
	}
}

// pollEvery is how often a condition without an event of its own is checked.
const pollEvery = 50 * time.Millisecond

// poll checks cond until it holds, ctx ends, or the container exits.
func (c *Container) poll(ctx context.Context, cond func() bool) error {
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		if cond() {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-c.exited:
			if cond() {
				return nil
			}
			return fmt.Errorf("systemd-nspawn exited: %v", c.waitErr)
		case <-tick.C:
		}
	}
}

// waitNotify waits for a line from systemd-nspawn on its notification socket.
func (c *Container) waitNotify(ctx context.Context, prefix string) (string, error) {
	var line string
	err := c.poll(ctx, func() bool {
		for _, l := range c.notify.Lines() {
			if strings.HasPrefix(l, prefix) {
				line = l
				return true
			}
		}
		return false
	})
	return line, err
}

// WaitReady waits until the container's systemd reported that its boot finished (READY=1,
// passed on by systemd-nspawn --notify-ready=yes): every start job of the boot is done.
func (c *Container) WaitReady(ctx context.Context) error {
	_, err := c.waitNotify(ctx, "READY=1")
	return err
}

// Output is what systemd-nspawn and the container's console printed so far.
func (c *Container) Output() string {
	select {
	case <-c.exited:
		return c.output.String()
	default:
		return "(the container is still running)"
	}
}

// Run runs argv in the container (all its namespaces) and returns its stdout and stderr
// together, and its error.
func (c *Container) Run(ctx context.Context, argv ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "nsenter", append([]string{"-t", strconv.Itoa(c.Leader), "-a", "--"}, argv...)...)
	cmd.Env = cleanEnv()
	// nsenter forks the command (to enter the PID namespace) and has no --kill-child here:
	// when ctx ends, the whole process group goes, and Wait does not wait for pipes that a
	// survivor would hold.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s: %w: %s", strings.Join(argv, " "), err, bytes.TrimSpace(out))
	}
	return string(out), nil
}

// MustRun is Run that fails the test on error.
func (c *Container) MustRun(ctx context.Context, argv ...string) string {
	c.t.Helper()
	out, err := c.Run(ctx, argv...)
	if err != nil {
		c.t.Fatalf("nspawn: %v", err)
	}
	return out
}

// Systemctl runs systemctl in the container.
func (c *Container) Systemctl(ctx context.Context, args ...string) (string, error) {
	return c.Run(ctx, append([]string{"systemctl", "--no-pager"}, args...)...)
}

// Journal is what journalctl prints in the container for args (such as "-u", "x.service"),
// without the pager, with short-precise timestamps.
func (c *Container) Journal(ctx context.Context, args ...string) string {
	c.t.Helper()
	return c.MustRun(ctx, append([]string{"journalctl", "--no-pager", "-q", "-o", "short-precise"}, args...)...)
}

// WaitSystem waits until the container's boot finished (`systemctl is-system-running --wait`)
// and returns the state it then reports: "running", or "degraded" when a unit failed.
func (c *Container) WaitSystem(ctx context.Context) string {
	c.t.Helper()
	out, _ := c.Systemctl(ctx, "is-system-running", "--wait")
	return strings.TrimSpace(lastLine(out))
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// Unit is what systemd says of a unit.
type Unit struct {
	Name           string
	ActiveState    string // active, inactive, failed, activating, deactivating
	SubState       string // exited, dead, running, start, ...
	Result         string // success, exit-code, protocol, dependency, timeout, ...
	ExecMainStatus int    // the main process's exit status
	ExecMainCode   int    // 1 exited, 2 killed, 3 dumped (CLD_*); 0 never ran
	StatusText     string // the last STATUS= it sent
	NRestarts      int
	// InvocationID changes at every start of the unit: the same ID before and after an action
	// means the unit did not run again.
	InvocationID string
}

// String is "name: active/exited (success, status 0)".
func (u Unit) String() string {
	return fmt.Sprintf("%s: %s/%s (%s, status %d)", u.Name, u.ActiveState, u.SubState, u.Result, u.ExecMainStatus)
}

// Show reads a unit's state with `systemctl show`.
func (c *Container) Show(ctx context.Context, name string) (Unit, error) {
	out, err := c.Systemctl(ctx, "show", name,
		"-p", "ActiveState,SubState,Result,ExecMainStatus,ExecMainCode,StatusText,NRestarts,InvocationID")
	if err != nil {
		return Unit{}, err
	}
	u := Unit{Name: name}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), "=")
		switch k {
		case "ActiveState":
			u.ActiveState = v
		case "SubState":
			u.SubState = v
		case "Result":
			u.Result = v
		case "ExecMainStatus":
			u.ExecMainStatus, _ = strconv.Atoi(v)
		case "ExecMainCode":
			u.ExecMainCode, _ = strconv.Atoi(v)
		case "StatusText":
			u.StatusText = v
		case "NRestarts":
			u.NRestarts, _ = strconv.Atoi(v)
		case "InvocationID":
			u.InvocationID = v
		}
	}
	return u, nil
}

// MustShow is Show that fails the test on error.
func (c *Container) MustShow(ctx context.Context, name string) Unit {
	c.t.Helper()
	u, err := c.Show(ctx, name)
	if err != nil {
		c.t.Fatalf("nspawn: %v", err)
	}
	return u
}

// WaitUnit waits until done holds for the unit's state (`systemctl show`, polled) and returns
// that state; it fails the test with the unit's journal when ctx ends first.
func (c *Container) WaitUnit(ctx context.Context, name string, done func(Unit) bool) Unit {
	c.t.Helper()
	var u Unit
	var lastErr error
	err := c.poll(ctx, func() bool {
		u, lastErr = c.Show(ctx, name)
		return lastErr == nil && done(u)
	})
	if err != nil {
		j, _ := c.Run(context.Background(), "journalctl", "--no-pager", "-q", "-u", name)
		c.t.Fatalf("nspawn: waiting for %s: %v (last: %v, %v)\njournal:\n%s", name, err, u, lastErr, j)
	}
	return u
}

// Ended is a WaitUnit condition: the unit was started in this boot, its main process is gone
// and it is no longer starting or stopping (active/exited, inactive/dead, failed/failed).
func Ended(u Unit) bool {
	if u.InvocationID == "" { // never started yet: inactive/dead too
		return false
	}
	switch u.ActiveState {
	case "failed", "inactive":
		return true
	case "active":
		return u.SubState == "exited"
	}
	return false
}

// Is returns a WaitUnit condition: the unit is in state (ActiveState/SubState, such as
// "active/running").
func Is(state string) func(Unit) bool {
	return func(u Unit) bool { return u.ActiveState+"/"+u.SubState == state }
}

// Poweroff shuts the container down (`systemctl poweroff` inside) and waits for
// systemd-nspawn to exit; it returns how long that took.
func (c *Container) Poweroff(ctx context.Context) (time.Duration, error) {
	start := time.Now()
	// Straight to the target: plain `systemctl poweroff` first asks logind (masked) and says so.
	if _, err := c.Systemctl(ctx, "start", "--no-block", "--job-mode=replace-irreversibly", "poweroff.target"); err != nil {
		return 0, err
	}
	select {
	case <-c.exited:
		return time.Since(start), nil
	case <-ctx.Done():
		return 0, fmt.Errorf("the container did not power off: %w", ctx.Err())
	}
}

// Exited is closed when systemd-nspawn has exited.
func (c *Container) Exited() <-chan struct{} { return c.exited }

// cleanup kills whatever is left (the container's PID 1 takes its whole PID namespace with
// it; systemd-nspawn then exits, and with it the last process of the private mount namespace,
// so its mounts go too) and removes the work folder.
func (c *Container) cleanup() {
	select {
	case <-c.exited:
	default:
		if c.Leader > 0 {
			_ = syscall.Kill(c.Leader, syscall.SIGKILL)
		}
		if c.cmd != nil && c.cmd.Process != nil {
			_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
		}
		select {
		case <-c.exited:
		case <-time.After(30 * time.Second):
			c.t.Errorf("nspawn: systemd-nspawn (pid %d) did not exit after SIGKILL", c.cmd.Process.Pid)
		}
	}
	c.removeCgroups()
	if c.t.Failed() && c.cmd != nil {
		c.t.Logf("nspawn: console of the container:\n%s", tail(c.output.String(), 6000))
	}
	if err := os.RemoveAll(c.work); err != nil {
		c.t.Errorf("nspawn: remove %s: %v", c.work, err)
	}
}

// cgroupName is the container's own cgroup, under the root of each systemd hierarchy.
func (c *Container) cgroupName() string { return filepath.Base(c.work) }

// removeCgroups removes the container's cgroups (deepest first: systemd-nspawn and the
// container's systemd made folders in them), now that no process is left in them.
func (c *Container) removeCgroups() {
	for _, h := range []string{"/sys/fs/cgroup/systemd", "/sys/fs/cgroup/unified", "/sys/fs/cgroup"} {
		top := filepath.Join(h, c.cgroupName())
		var dirs []string
		_ = filepath.WalkDir(top, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			_ = os.Remove(dirs[i])
		}
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// ownerFile in a container's work folder names the test process that made it.
const ownerFile = "owner"

// killOrphans kills the PID 1 of every container left by a test process that no longer runs
// (its cleanup never ran): its whole PID namespace goes with it. Then it removes the work
// folders such processes left (their mounts lived in the dead namespace).
func killOrphans() {
	defer removeOrphanedWork()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue
		}
		for _, kv := range bytes.Split(env, []byte{0}) {
			owner, ok := bytes.CutPrefix(kv, []byte(ownerMarker+"="))
			if !ok {
				continue
			}
			if o, err := strconv.Atoi(string(owner)); err == nil && !alive(o) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			break
		}
	}
}

func removeOrphanedWork() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "pcs-nspawn-*"))
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, ownerFile))
		if err != nil {
			continue
		}
		if o, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && !alive(o) {
			_ = os.RemoveAll(d)
		}
	}
}

func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
