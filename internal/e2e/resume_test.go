package e2e_test

import (
	"os"
	"path/filepath"
	"strings"
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
	p := n.start("run", "--stage", bootstrapped, "--config", cfg)
	eventually(t, 20*time.Second, "cut to start", func() bool {
		return strings.Contains(n.scriptLog(bootstrapped, "cut"), "waiting\n")
	})
	pg := n.pgidIn(bootstrapped, "cut")
	require.NotZero(t, pg)
	t.Cleanup(func() { killGroup(pg) })
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL))
	killGroup(pg)
	p.wait(t, 10*time.Second)

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
