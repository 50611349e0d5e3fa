package e2e_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/testenv"
)

// TestTerminatedInstanceSkipsRegistration: after a TERMINATE, run --stage nodeReady exits 4
// at once; it does not wait for a registration that may never come (and then exit 1).
func TestTerminatedInstanceSkipsRegistration(t *testing.T) {
	t.Parallel()
	b := newBucket(t)
	n := newNode(t)
	s := startCluster(t, []*node{n}, testenv.SlurmOptions{}) // no slurmd: the node never registers
	cfg := n.writeConfig(stages(
		[]scriptDef{script("dies", b.put(t, "dies.sh", failScript(9)))},
		[]scriptDef{script("never", b.put(t, "never.sh", okScript("ran"))).onErr("CONTINUE")}))
	n.requireRun(4, "run", "--stage", bootstrapped, "--config", cfg)
	r := n.run("run", "--stage", ready, "--scontrol", s.Scontrol, "--registration-poll", "200ms", "--registration-timeout", "20s")
	require.Equal(t, 4, r.code, "%s", r)
	require.Empty(t, n.find("message", "waiting for the node's Slurm registration"), "it waited for the registration")
	require.NoFileExists(t, n.scriptLogPath(ready, "never"))
}

// TestRegistrationTimeoutIsRecorded: a nodeReady that never ran because the node did not
// register shows in status (exit 1) and wait returns 1 at once instead of blocking; running the
// stage again in the boot tries again.
func TestRegistrationTimeoutIsRecorded(t *testing.T) {
	t.Parallel()
	b := newBucket(t)
	n := newNode(t)
	s := startCluster(t, []*node{n}, testenv.SlurmOptions{})
	cfg := n.writeConfig(stages(nil, []scriptDef{script("late", b.put(t, "late.sh", okScript("ran"))).onErr("CONTINUE")}))
	args := []string{"--scontrol", s.Scontrol, "--registration-poll", "200ms"}
	n.requireRun(1, "run", append([]string{"--stage", ready, "--config", cfg, "--registration-timeout", "1s"}, args...)...)
	st, code := n.status()
	require.Equal(t, 1, code)
	require.Equal(t, "not_registered", stageOf(t, st, ready).Status)
	r := n.run("wait", "--stage", ready, "--timeout", "20s")
	require.Equal(t, 1, r.code, "%s", r)
	require.Contains(t, r.stderr, "nodeReady finished with exit 1", "wait blocked on a stage that will not run")

	s.StartSlurmd(t, n.name)
	n.requireRun(0, "run", append([]string{"--stage", ready, "--registration-timeout", "60s"}, args...)...)
	require.Len(t, n.runs(ready, "late"), 1)
}

// TestCacheOnceMissingCopyIsAFailure: a CACHE_ONCE copy removed from the cache is a download
// failure with an ERROR line, never a silent download (SPEC §3).
func TestCacheOnceMissingCopyIsAFailure(t *testing.T) {
	t.Parallel()
	w := newWeb(t)
	n := newNode(t, withCA(w))
	cfg := n.writeConfig(stages([]scriptDef{
		script("gone", w.put("/gone.sh", okScript("gone-ran"))).every().onErr("CONTINUE"),
	}, nil))
	n.requireRun(0, "run", "--stage", bootstrapped, "--config", cfg)
	require.NoError(t, os.Remove(filepath.Join(n.scriptsDir(), "gone")))
	before := w.requests("/gone.sh")
	n.reboot()
	n.requireRun(3, "run", "--stage", bootstrapped)
	require.Equal(t, before, w.requests("/gone.sh"), "the missing copy was downloaded again")
	require.Len(t, n.runs(bootstrapped, "gone"), 1)
	n.requireLog("level", "ERROR", "script", "gone", "message~", "missing")
}

// TestLaterBootRemoteConfigNotFetched: with a cached configuration, a remote --config is not
// fetched at all (a boot never waits on a document it ignores), and an unreadable local one
// is a WARN.
func TestLaterBootRemoteConfigNotFetched(t *testing.T) {
	t.Parallel()
	w := newWeb(t)
	n := newNode(t, withCA(w))
	doc := stages([]scriptDef{script("a", w.put("/a.sh", okScript("a-ran"))).every()}, nil).json(t)
	w.put("/config.json", doc)
	n.requireRun(0, "run", "--stage", bootstrapped, "--config", w.URL+"/config.json")
	require.Equal(t, 1, w.requests("/config.json"))
	n.reboot()
	w.serve("/config.json", webFile{data: doc, failFirst: 100})
	r := n.requireRun(0, "run", "--stage", bootstrapped, "--config", w.URL+"/config.json")
	require.Equal(t, 1, w.requests("/config.json"), "the cached configuration's boot fetched --config")
	require.NotContains(t, r.stderr, "retrying", "no download of --config was tried")
	n.reboot()
	n.requireRun(0, "run", "--stage", bootstrapped, "--config", filepath.Join(t.TempDir(), "missing.json"))
	n.requireLog("level", "WARN", "message~", "--config unreadable")
}

// TestSignalWhileWaitingForLock: SIGTERM to a run waiting for the lock exits 143 (SPEC §4).
func TestSignalWhileWaitingForLock(t *testing.T) {
	t.Parallel()
	b := newBucket(t)
	n := newNode(t)
	release := filepath.Join(t.TempDir(), "release")
	cfg := n.writeConfig(stages([]scriptDef{script("holder", b.put(t, "holder.sh", waitScript(release)))}, nil))
	holder, _ := n.startWaiting(t, "holder", "--config", cfg)
	waiter := n.start("run", "--stage", bootstrapped, "--lock-timeout", "60s")
	n.awaitLockWait(t)
	require.NoError(t, waiter.cmd.Process.Signal(syscall.SIGTERM))
	r := waiter.wait(t, 10*time.Second)
	require.Equal(t, 143, r.code, "%s", r)
	n.requireLog("level", "WARN", "message~", "interrupted while waiting for the lock", "exit_code", "143")
	require.NoError(t, os.WriteFile(release, nil, 0o644))
	require.Equal(t, 0, holder.wait(t, 30*time.Second).code)
}
