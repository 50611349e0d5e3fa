package systemdtest_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/nspawn"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/testenv"
)

// TestSlurmRegistrationAndJobHold: the real slurmd (Debian's slurmd.service) inside the
// container registers with a slurmctld on the host's loopback. nodeBootstrapped runs before
// slurmd starts; nodeReady only once the node is registered, with the node drained
// (--hold-jobs-until-ready) so that a job submitted meanwhile stays pending; the job runs once
// nodeReady is done, and sees that it is.
func TestSlurmRegistrationAndJobHold(t *testing.T) {
	t.Parallel()
	for _, m := range modes {
		t.Run(m.String(), func(t *testing.T) {
			t.Parallel()
			ctx := testContext(t)
			s := testenv.StartSlurm(t, testenv.SlurmOptions{Nodes: []string{"node1"}})
			n := newNode(t, m)
			n.realSlurmd = true
			// The cluster's folder (slurm.conf, munge's socket, spool, logs, job output) at the
			// same path inside.
			n.binds = append(n.binds, s.Dir)
			require.NoError(t, os.MkdirAll(filepath.Join(s.Dir, "spool", "node1"), 0o755))
			n.units["slurmd.service.d/20-systemdtest.conf"] = fmt.Sprintf(`[Unit]
ConditionPathExists=
[Service]
ExecStart=
ExecStart=/usr/sbin/slurmd -D -s -f %s -N node1
`, s.Conf)
			n.setEnv("SLURM_CONF=" + s.Conf)
			n.setEnv("PCS_LIFECYCLE_OPTIONS=--hold-jobs-until-ready --registration-poll 200ms")

			// nodeReady's script waits until the test releases it through a FIFO (a blocking
			// read: no polling inside), then records that it was released.
			release := filepath.Join(n.dir, "marks", "release")
			require.NoError(t, syscall.Mkfifo(release, 0o600))
			n.configure(
				[]script{ok("boot")},
				[]script{{name: "hold", body: `scontrol -o show node "$PCS_NODE_ID" | grep -o 'State=[^ ]*' >> ` + marksDir + `/runs
read line < ` + marksDir + `/release
echo "released" >> ` + marksDir + "/runs"}},
			)
			start := time.Now()
			c := n.boot(ctx)
			eventually(t, ctx, "nodeReady's script started", func() bool { return len(n.runs()) >= 3 })
			record(t, "boot to nodeReady's script (slurmd registered)", time.Since(start))
			require.Equal(t, []string{
				"nodeBootstrapped/boot first=1 slurmd=inactive",
				"nodeReady/hold first=1 slurmd=active",
			}, n.runs()[:2])
			// The node as nodeReady's script saw it: registered, and drained by the job hold.
			st := n.runs()[2]
			require.Contains(t, st, "DRAIN", "the node is not held while nodeReady runs: %s", st)
			require.NotContains(t, st, "NOT_RESPONDING")

			// A job submitted now stays pending until nodeReady is done.
			job := s.Sbatch(t, "cat "+marksDir+"/runs", "-w", "node1")
			require.Equal(t, "PENDING", s.JobState(t, job))
			requireNotEnded(t, c, readyUnitOf(m))
			// Whether systemd counts the boot as finished while nodeReady runs: in daemon mode
			// the start job ended at READY=1; in per-stage mode the oneshot's start job is the
			// whole stage (registration wait included).
			sys, _ := c.Systemctl(ctx, "is-system-running")
			if m == daemonMode {
				require.Equal(t, "running", strings.TrimSpace(sys))
			} else {
				require.Equal(t, "starting", strings.TrimSpace(sys))
			}

			released := time.Now()
			writeFIFO(t, ctx, release, "go\n")
			eventually(t, ctx, "the job completed", func() bool {
				st := s.JobState(t, job)
				require.NotContains(t, []string{"FAILED", "CANCELLED", "NODE_FAIL", "TIMEOUT"}, st)
				return st == "COMPLETED"
			})
			record(t, "nodeReady released to the held job's end", time.Since(released))
			out := s.JobOutput(job)
			require.Contains(t, out, "released", "the job ran before nodeReady was done:\n%s", out)

			ready := c.WaitUnit(ctx, readyUnitOf(m), nspawn.Ended)
			require.Equal(t, "active/exited", state(ready), "%v", ready)
			require.Equal(t, 0, ready.ExecMainStatus)
			require.Equal(t, "active/running", state(c.MustShow(ctx, slurmdUnit)))
			requireSystem(t, ctx, c, "running")
			log := n.executorLog()
			require.Contains(t, log, `"message":"node registered with Slurm"`)
			n.poweroff(ctx, c)
		})
	}
}

// requireNotEnded: the unit is still running (nodeReady is held by its script).
func requireNotEnded(t *testing.T, c *nspawn.Container, unit string) {
	t.Helper()
	u := c.MustShow(t.Context(), unit)
	require.False(t, nspawn.Ended(u), "%v", u)
}

// writeFIFO writes to a FIFO whose reader is a script in the container. Opening blocks until
// the reader opens it; when ctx ends first, the test opens it for reading itself to get out.
func writeFIFO(t *testing.T, ctx context.Context, path, data string) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err == nil {
			_, err = f.WriteString(data)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		done <- err
	}()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-ctx.Done():
		if r, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
			<-done
			r.Close()
		}
		t.Fatalf("nobody read %s: %v", path, ctx.Err())
	}
}
