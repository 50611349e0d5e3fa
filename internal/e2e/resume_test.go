package e2e_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestResumedStageKeepsEarlierFailure: a stage resumed in the same boot after a kill does not
// run again what ended, and a failure recorded before the kill still counts: CONTINUE's exit 3
// stands (it used to become 0 once the failed script was skipped as "already ran").
func TestResumedStageKeepsEarlierFailure(t *testing.T) {
	t.Parallel()
	b := newBucket(t)
	n := newNode(t)
	release := filepath.Join(t.TempDir(), "release")
	cfg := n.writeConfig(stages([]scriptDef{
		script("fails", b.put(t, "fail.sh", failScript(5))).onErr("CONTINUE"),
		script("cut", b.put(t, "cut.sh", waitScript(release))),
		script("after", b.put(t, "after.sh", okScript("after-ran"))),
	}, nil))
	p, pg := n.startWaiting(t, "cut", "--config", cfg)
	p.powerCut(t, pg)

	require.NoError(t, os.WriteFile(release, nil, 0o644))
	r := n.requireRun(3, "run", "--stage", bootstrapped)
	require.Contains(t, r.stderr, "fails")
	require.Len(t, n.runs(bootstrapped, "fails"), 1, "the failed script is not run again in this boot")
	require.Len(t, n.runs(bootstrapped, "cut"), 2, "the interrupted one is")
	require.Len(t, n.runs(bootstrapped, "after"), 1)
	st, code := n.status()
	require.Equal(t, 3, code)
	require.Equal(t, "failed", stageOf(t, st, bootstrapped).Status)
	require.Equal(t, "failed", scriptOf(t, st, bootstrapped, "fails").ThisBoot)
	n.requireRun(3, "run", "--stage", bootstrapped) // and the recorded result stands after
}

// TestResumeStopsOrphanedScript: when the executor is killed outright its script lives on in
// its own process group; the run that resumes the stage in the same boot stops that group
// before running the script again, so the script never runs twice at once.
func TestResumeStopsOrphanedScript(t *testing.T) {
	t.Parallel()
	b := newBucket(t)
	n := newNode(t)
	release := filepath.Join(t.TempDir(), "release")
	cfg := n.writeConfig(stages([]scriptDef{script("long", b.put(t, "long.sh", waitScript(release)))}, nil))
	p, orphan := n.startWaiting(t, "long", "--config", cfg)
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL))
	p.wait(t, 10*time.Second)
	require.True(t, groupAlive(orphan), "the script outlived its executor (the case under test)")

	resumed := n.start("run", "--stage", bootstrapped)
	eventually(t, 30*time.Second, "the orphan to be stopped", func() bool { return !groupAlive(orphan) })
	eventually(t, 30*time.Second, "long to run again", func() bool { return len(n.runs(bootstrapped, "long")) == 2 })
	require.NoError(t, os.WriteFile(release, nil, 0o644))
	require.Equal(t, 0, resumed.wait(t, 30*time.Second).code)
	n.requireLog("level", "WARN", "message~", "stopped what was left", "script", "long")
}
