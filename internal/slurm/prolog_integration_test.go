package slurm_test

// scripts/slurm-prolog.sh installed as the Prolog (PrologFlags=Alloc) of a real slurmd, with
// a stand-in for `pcs-lifecycle wait` that blocks until the test releases it with an exit code.

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/slurm"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/testenv"
)

type prologNode struct {
	s   *testenv.Slurm
	dir string // the stand-in's files: args (what it was called with), release (its exit code)
}

// startPrologCluster runs a cluster whose Prolog is scripts/slurm-prolog.sh with
// PCS_LIFECYCLE pointing at the stand-in (or at a missing file when missing is set).
func startPrologCluster(t *testing.T, missing bool) *prologNode {
	t.Helper()
	_, self, _, _ := runtime.Caller(0)
	prolog, err := filepath.Abs(filepath.Join(filepath.Dir(self), "..", "..", "scripts", "slurm-prolog.sh"))
	require.NoError(t, err)
	dir, err := os.MkdirTemp("", "prolog-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	stub := filepath.Join(dir, "pcs-lifecycle")
	require.NoError(t, os.WriteFile(stub, []byte(fmt.Sprintf(`#!/bin/sh
echo "$*" >> %[1]s/args
while [ ! -f %[1]s/release ]; do sleep 0.1; done
exit "$(cat %[1]s/release)"
`, dir)), 0o755))
	exe := stub
	if missing {
		exe = filepath.Join(dir, "not-installed")
	}
	wrapper := filepath.Join(dir, "prolog")
	require.NoError(t, os.WriteFile(wrapper, []byte(fmt.Sprintf("#!/bin/sh\nPCS_LIFECYCLE=%s PCS_LIFECYCLE_PROLOG_TIMEOUT=5m exec %s\n", exe, prolog)), 0o755))

	s := testenv.StartSlurm(t, testenv.SlurmOptions{Prolog: wrapper, PrologFlags: "Alloc", Extra: []string{"BatchStartTimeout=2"}})
	s.StartSlurmd(t, "node1")
	return &prologNode{s: s, dir: dir}
}

func (p *prologNode) release(t *testing.T, code int) {
	t.Helper()
	tmp := filepath.Join(p.dir, "release.tmp")
	require.NoError(t, os.WriteFile(tmp, []byte(fmt.Sprint(code)), 0o644))
	require.NoError(t, os.Rename(tmp, filepath.Join(p.dir, "release")))
}

func (p *prologNode) calls() string {
	b, _ := os.ReadFile(filepath.Join(p.dir, "args"))
	return string(b)
}

// waitCalled waits until the prolog called the stand-in.
func (p *prologNode) waitCalled(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for p.calls() == "" {
		require.True(t, time.Now().Before(deadline), "the prolog never called pcs-lifecycle; slurmd log:\n%s", readFile(p.s.SlurmdLog("node1")))
		time.Sleep(100 * time.Millisecond)
	}
}

func TestPrologHoldsJobUntilNodeReady(t *testing.T) {
	t.Parallel()
	for _, code := range []int{0, 3} {
		t.Run(fmt.Sprintf("wait exits %d", code), func(t *testing.T) {
			t.Parallel()
			p := startPrologCluster(t, false)
			id := p.s.Sbatch(t, "echo job ran", "-w", "node1")
			p.waitCalled(t)
			assert.Equal(t, "wait --stage nodeReady --timeout 5m\n", p.calls())
			// Longer than BatchStartTimeout (2 s here): a prolog that takes long does not fail
			// the job's launch. (Slurm 22.05 shows the job RUNNING meanwhile; its script starts
			// only after the prolog.)
			deadline := time.Now().Add(5 * time.Second)
			for time.Now().Before(deadline) {
				assert.Empty(t, p.s.JobOutput(id), "the job started while nodeReady ran")
				time.Sleep(500 * time.Millisecond)
			}
			st := p.s.JobState(t, id)
			assert.Contains(t, []string{"CONFIGURING", "RUNNING"}, st)
			t.Logf("job state while the prolog waits: %s", st)
			p.release(t, code)
			require.Equal(t, "COMPLETED", waitJob(t, p.s, id, 60*time.Second))
			assert.Equal(t, "job ran\n", p.s.JobOutput(id))
		})
	}
}

func TestPrologRefusesJobsAfterFailure(t *testing.T) {
	t.Parallel()
	for _, code := range []int{4, 1} {
		t.Run(fmt.Sprintf("wait exits %d", code), func(t *testing.T) {
			t.Parallel()
			p := startPrologCluster(t, false)
			c := newClient(p.s)
			ctx := ctxFor(t, time.Minute)
			id := p.s.Sbatch(t, "echo job ran", "-w", "node1")
			p.waitCalled(t)
			p.release(t, code)

			// slurmctld drains the node with reason "Prolog error" and requeues the job.
			var st slurm.State
			deadline := time.Now().Add(30 * time.Second)
			for {
				var err error
				st, err = c.NodeState(ctx, "node1")
				require.NoError(t, err)
				if st.Drained() || time.Now().After(deadline) {
					break
				}
				time.Sleep(200 * time.Millisecond)
			}
			require.True(t, st.Drained(), "node not drained after the prolog failed: %s", st)
			t.Logf("node after the prolog failed: %s, reason %q", st, st.Reason)
			assert.Contains(t, strings.ToLower(st.Reason), "prolog")
			// Then the job is requeued held (its reason says so).
			var out string
			require.Eventually(t, func() bool {
				out = p.s.Run(t, "scontrol", "-o", "show", "job", id)
				return strings.Contains(out, "Reason=launch_failed_requeued_held")
			}, 30*time.Second, 200*time.Millisecond, "the job was not requeued held")
			t.Logf("job after the prolog failed: %s", out)
			assert.Empty(t, p.s.JobOutput(id), "the job ran")
			assert.NotContains(t, out, "JobState=COMPLETED")
			assert.NotContains(t, out, "JobState=RUNNING")
			assert.Contains(t, out, "Reason=launch_failed_requeued_held", "Slurm 22.05 requeues the batch job held")
		})
	}
}

func TestPrologWithoutExecutorLetsJobsRun(t *testing.T) {
	t.Parallel()
	p := startPrologCluster(t, true)
	id := p.s.Sbatch(t, "echo job ran", "-w", "node1")
	require.Equal(t, "COMPLETED", waitJob(t, p.s, id, 60*time.Second))
	assert.Equal(t, "job ran\n", p.s.JobOutput(id))
	assert.Empty(t, p.calls())
}
