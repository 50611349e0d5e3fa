package systemdtest_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/nspawn"
)

// The scenarios below run in both modes: daemon (pcs-lifecycle.service with the slurmd
// drop-in) and per-stage (the two oneshots), each in a container of its own.
var modes = []mode{daemonMode, stageMode}

// bootUnitOf is the unit that runs nodeBootstrapped in mode m; readyUnitOf runs nodeReady.
func bootUnitOf(m mode) string {
	if m == stageMode {
		return bootUnit
	}
	return daemonUnit
}

func readyUnitOf(m mode) string {
	if m == stageMode {
		return readyUnit
	}
	return daemonUnit
}

func state(u nspawn.Unit) string { return u.ActiveState + "/" + u.SubState }

// waitDone waits until the units of the mode ended (nodeReady's last) and the boot finished.
// Units named in before must have been started again since (a new invocation).
func waitDone(ctx context.Context, c *nspawn.Container, m mode, before ...nspawn.Unit) (boot, ready nspawn.Unit, system string) {
	ended := func(name string) func(nspawn.Unit) bool {
		return func(u nspawn.Unit) bool {
			for _, b := range before {
				if b.Name == name && b.InvocationID == u.InvocationID {
					return false
				}
			}
			return nspawn.Ended(u)
		}
	}
	boot = c.WaitUnit(ctx, bootUnitOf(m), ended(bootUnitOf(m)))
	ready = c.WaitUnit(ctx, readyUnitOf(m), ended(readyUnitOf(m)))
	system = c.WaitSystem(ctx)
	return boot, ready, system
}

// requireSystem: `systemctl is-system-running --wait` says want; otherwise the failed units
// and the boot's warnings are in the failure.
func requireSystem(t *testing.T, ctx context.Context, c *nspawn.Container, want string, msg ...string) {
	t.Helper()
	got := c.WaitSystem(ctx)
	if got != want {
		failed, _ := c.Systemctl(ctx, "--failed")
		t.Fatalf("system %q, want %q %v\nfailed units:\n%s\nwarnings:\n%s", got, want, msg, failed, c.Journal(ctx, "-p", "warning"))
	}
}

// restartSlurmd runs `systemctl restart slurmd` and returns its error (a failed dependency is
// an error).
func restartSlurmd(ctx context.Context, c *nspawn.Container) error {
	_, err := c.Systemctl(ctx, "restart", slurmdUnit)
	return err
}

// requireNoRerun: after a restart of slurmd, no pcs-lifecycle unit was started again and no
// script ran again.
func requireNoRerun(t *testing.T, ctx context.Context, c *nspawn.Container, n *node, units ...nspawn.Unit) {
	t.Helper()
	runs := n.runs()
	require.NoError(t, restartSlurmd(ctx, c))
	for _, u := range units {
		again := c.MustShow(ctx, u.Name)
		require.Equal(t, u.InvocationID, again.InvocationID, "restarting slurmd started %s again", u.Name)
		require.Equal(t, state(u), state(again), u.Name)
	}
	require.Equal(t, "active/running", state(c.MustShow(ctx, slurmdUnit)))
	require.Equal(t, runs, n.runs(), "a script ran again")
}

// TestStopSequence: a STOP_SEQUENCE failure in nodeBootstrapped skips the rest of the stage,
// exits 3, and the node carries on: slurmd starts, nodeReady runs, the unit is active (exited)
// with status 3, the system is not degraded; the journal names the failed script; a slurmd
// restart runs nothing again.
func TestStopSequence(t *testing.T) {
	t.Parallel()
	for _, m := range modes {
		t.Run(m.String(), func(t *testing.T) {
			t.Parallel()
			ctx := testContext(t)
			n := newNode(t, m)
			n.configure(
				[]script{{name: "fails", body: "echo about to fail; exit 7", onError: "STOP_SEQUENCE"}, ok("skipped")},
				[]script{ok("ready")},
			)
			start := time.Now()
			c := n.boot(ctx)
			boot, ready, system := waitDone(ctx, c, m)
			record(t, "boot to the end of nodeReady", time.Since(start))
			require.Equal(t, "active/exited", state(boot), "%v", boot)
			require.Equal(t, 3, boot.ExecMainStatus, "%v", boot)
			require.Equal(t, "active/exited", state(ready), "%v", ready)
			if m == stageMode {
				require.Equal(t, 0, ready.ExecMainStatus, "%v", ready)
			}
			require.Equal(t, "running", system, "exit 3 must not make the system degraded")
			require.Equal(t, []string{
				"nodeBootstrapped/fails first=1 slurmd=inactive",
				"nodeReady/ready first=1 slurmd=active",
			}, n.runs())

			j := c.Journal(ctx, "-u", bootUnitOf(m))
			t.Logf("journalctl -u %s:\n%s", bootUnitOf(m), j)
			assert.Contains(t, j, "nodeBootstrapped/fails failed (exit=7) onError=STOP_SEQUENCE")
			assert.Contains(t, j, "exit 3 for stage nodeBootstrapped")

			units := []nspawn.Unit{boot}
			if m == stageMode {
				units = append(units, ready)
			}
			requireNoRerun(t, ctx, c, n, units...)
			n.poweroff(ctx, c)
		})
	}
}

// TestTerminate: a TERMINATE failure in nodeBootstrapped fails the unit with status 4 and
// slurmd never starts ("Dependency failed"), also not on a later `systemctl restart slurmd`
// (the executor runs again, runs nothing and exits 4 again); the journal holds the failure
// summary with the script's last lines.
func TestTerminate(t *testing.T) {
	t.Parallel()
	for _, m := range modes {
		t.Run(m.String(), func(t *testing.T) {
			t.Parallel()
			ctx := testContext(t)
			n := newNode(t, m)
			n.configure(
				[]script{{name: "broken-mount", body: "echo mounting /shared; echo mount: /shared: no such device >&2; exit 32", onError: "TERMINATE"}, ok("never")},
				[]script{ok("never-ready")},
			)
			start := time.Now()
			c := n.boot(ctx)
			boot := c.WaitUnit(ctx, bootUnitOf(m), nspawn.Ended)
			system := c.WaitSystem(ctx)
			record(t, "boot to the failed unit", time.Since(start))
			require.Equal(t, "failed/failed", state(boot), "%v", boot)
			require.Equal(t, 4, boot.ExecMainStatus, "%v", boot)
			require.Equal(t, "exit-code", boot.Result)
			require.Equal(t, "degraded", system)
			s := c.MustShow(ctx, slurmdUnit)
			require.Equal(t, "inactive/dead", state(s), "slurmd started after a TERMINATE")
			require.Empty(t, s.InvocationID, "slurmd was started after a TERMINATE")
			both := c.Journal(ctx, "-u", bootUnitOf(m), "-u", slurmdUnit)
			t.Logf("journal:\n%s", both)
			require.Contains(t, both, "Dependency failed for slurmd.service")

			// The failure summary, as an operator reads it.
			j := c.Journal(ctx, "-u", bootUnitOf(m), "-o", "cat")
			for _, want := range []string{
				"nodeBootstrapped/broken-mount failed (exit=32) onError=TERMINATE",
				"exit 4 for stage nodeBootstrapped",
				"TERMINATE: ",
				"| mount: /shared: no such device",
				"the node must be replaced",
			} {
				assert.Contains(t, j, want)
			}
			if m == stageMode {
				// slurmd's Wants= still starts the nodeReady oneshot after slurmd's failed start;
				// its ExecCondition= skips it (not a failure).
				requireSkipped(t, ctx, c)
			}
			require.Equal(t, []string{"nodeBootstrapped/broken-mount first=1 slurmd=inactive"}, n.runs())

			// A restart of slurmd: the executor runs again (the failed unit is not active),
			// runs nothing, exits 4, and slurmd still does not start.
			err := restartSlurmd(ctx, c)
			require.Error(t, err, "slurmd restarted after a TERMINATE")
			require.Contains(t, err.Error(), "dependency job for slurmd.service failed")
			again := c.MustShow(ctx, bootUnitOf(m))
			require.NotEqual(t, boot.InvocationID, again.InvocationID)
			require.Equal(t, "failed/failed", state(again))
			require.Equal(t, 4, again.ExecMainStatus)
			require.Equal(t, "inactive/dead", state(c.MustShow(ctx, slurmdUnit)))
			require.Len(t, n.runs(), 1, "a script ran again after a TERMINATE")
			require.Contains(t, c.Journal(ctx, "-u", bootUnitOf(m), "-o", "cat"), "instance was terminated by an earlier TERMINATE")
			n.poweroff(ctx, c)
		})
	}
}

// TestTerminateInNodeReady: a TERMINATE failure in nodeReady, when slurmd already runs: the
// unit that ran it fails with 4 and slurmd keeps running. A later `systemctl restart slurmd`
// then differs by mode: in daemon mode the failed daemon starts again and exits 4 before
// READY=1, so slurmd stays down; in per-stage mode slurmd restarts (its requirement, the
// bootstrapped oneshot, is still active) and the nodeReady oneshot fails again.
func TestTerminateInNodeReady(t *testing.T) {
	t.Parallel()
	for _, m := range modes {
		t.Run(m.String(), func(t *testing.T) {
			t.Parallel()
			ctx := testContext(t)
			n := newNode(t, m)
			n.configure([]script{ok("boot")}, []script{{name: "bad-ready", body: "exit 9", onError: "TERMINATE"}})
			start := time.Now()
			c := n.boot(ctx)
			ready := c.WaitUnit(ctx, readyUnitOf(m), nspawn.Ended)
			record(t, "boot to the failed unit", time.Since(start))
			require.Equal(t, "failed/failed", state(ready), "%v", ready)
			require.Equal(t, 4, ready.ExecMainStatus)
			requireSystem(t, ctx, c, "degraded")
			require.Equal(t, "active/running", state(c.MustShow(ctx, slurmdUnit)), "a failure after slurmd started stopped it")
			require.Contains(t, c.Journal(ctx, "-u", readyUnitOf(m), "-o", "cat"), "nodeReady/bad-ready failed (exit=9) onError=TERMINATE")

			err := restartSlurmd(ctx, c)
			again := c.WaitUnit(ctx, readyUnitOf(m), func(u nspawn.Unit) bool { return u.InvocationID != ready.InvocationID && nspawn.Ended(u) })
			require.Equal(t, "failed/failed", state(again), "%v", again)
			require.Equal(t, 4, again.ExecMainStatus)
			if m == daemonMode {
				require.Error(t, err, "slurmd restarted after a TERMINATE")
				require.Equal(t, "inactive/dead", state(c.MustShow(ctx, slurmdUnit)))
			} else {
				require.NoError(t, err)
				require.Equal(t, "active/running", state(c.MustShow(ctx, slurmdUnit)))
			}
			require.Equal(t, []string{
				"nodeBootstrapped/boot first=1 slurmd=inactive",
				"nodeReady/bad-ready first=1 slurmd=active",
			}, n.runs(), "a script ran again after a TERMINATE")
			n.poweroff(ctx, c)
		})
	}
}

// TestLongScriptShortStartTimeout: TimeoutStartSec=3s on the unit and a nodeBootstrapped
// script of 6 s. The daemon extends its start timeout (EXTEND_TIMEOUT_USEC, every third of
// --extend-timeout 1500ms) so systemd lets it finish; the per-stage oneshot has no extension
// and is killed at its TimeoutStartSec (the 35 min default is its backstop): the unit fails
// with "timeout", slurmd does not start, and the executor recorded the interruption.
func TestLongScriptShortStartTimeout(t *testing.T) {
	t.Parallel()
	for _, m := range modes {
		t.Run(m.String(), func(t *testing.T) {
			t.Parallel()
			ctx := testContext(t)
			n := newNode(t, m)
			n.setEnv(`PCS_LIFECYCLE_OPTIONS=--extend-timeout 1500ms`)
			if m == stageMode {
				n.setEnv(`PCS_LIFECYCLE_OPTIONS=`)
			}
			n.units[bootUnitOf(m)+".d/50-short-timeout.conf"] = "[Service]\nTimeoutStartSec=3s\n"
			// The script's length is the workload under test, not a synchronisation.
			n.configure([]script{{name: "long", body: "sleep 6; echo long done"}}, []script{ok("ready")})
			start := time.Now()
			c := n.boot(ctx)
			boot := c.WaitUnit(ctx, bootUnitOf(m), nspawn.Ended)
			record(t, "boot to the end of nodeBootstrapped", time.Since(start))
			if m == daemonMode {
				ready := c.WaitUnit(ctx, daemonUnit, nspawn.Ended)
				require.Equal(t, "active/exited", state(ready), "%v", ready)
				require.Equal(t, 0, ready.ExecMainStatus)
				require.Contains(t, n.scriptLog("nodeBootstrapped", "long"), "long done")
				requireSystem(t, ctx, c, "running")
				require.Equal(t, "active/running", state(c.MustShow(ctx, slurmdUnit)))
				requireNoRerun(t, ctx, c, n, ready)
			} else {
				require.Equal(t, "failed/failed", state(boot), "%v", boot)
				require.Equal(t, "timeout", boot.Result, "%v", boot)
				requireSystem(t, ctx, c, "degraded")
				require.Equal(t, "inactive/dead", state(c.MustShow(ctx, slurmdUnit)))
				require.NotContains(t, n.scriptLog("nodeBootstrapped", "long"), "long done")
				require.Contains(t, n.executorLog(), "interrupted")
				requireSkipped(t, ctx, c)
			}
			n.poweroff(ctx, c)
		})
	}
}

// TestStopDuringStage: `systemctl stop` while a nodeBootstrapped script runs: the executor
// ends the script, saves the state and exits 143, which is a clean stop for systemd (inactive,
// not failed; the system is not degraded) and slurmd did not start. A later
// `systemctl restart slurmd` starts the unit again, which resumes the interrupted script,
// and slurmd starts once it is done.
func TestStopDuringStage(t *testing.T) {
	t.Parallel()
	for _, m := range modes {
		t.Run(m.String(), func(t *testing.T) {
			t.Parallel()
			ctx := testContext(t)
			n := newNode(t, m)
			// Hangs on its first run only.
			hang := `if [ ! -e ` + marksDir + `/hung ]; then touch ` + marksDir + `/hung; exec sleep 600; fi; echo second run`
			n.configure([]script{{name: "hang-once", body: hang}}, []script{ok("ready")})
			c := n.boot(ctx)
			eventually(t, ctx, "the script started", func() bool {
				_, err := os.Stat(filepath.Join(n.dir, "marks", "hung"))
				return err == nil
			})
			start := time.Now()
			_, err := c.Systemctl(ctx, "stop", bootUnitOf(m))
			require.NoError(t, err)
			record(t, "systemctl stop during the script", time.Since(start))
			boot := c.MustShow(ctx, bootUnitOf(m))
			require.Equal(t, "inactive/dead", state(boot), "%v", boot)
			require.Equal(t, 143, boot.ExecMainStatus, "%v", boot)
			require.Equal(t, "success", boot.Result, "a deliberate stop is not a failure")
			requireSystem(t, ctx, c, "running", "a deliberate stop must not make the system degraded")
			require.Empty(t, c.MustShow(ctx, slurmdUnit).InvocationID, "slurmd started although nodeBootstrapped was stopped")
			require.Contains(t, n.executorLog(), "interrupted")
			var before []nspawn.Unit
			if m == stageMode {
				requireSkipped(t, ctx, c)
				before = append(before, c.MustShow(ctx, readyUnit))
			}

			// Starting slurmd again starts the unit, which resumes the interrupted script.
			require.NoError(t, restartSlurmd(ctx, c))
			boot, ready, system := waitDone(ctx, c, m, append(before, boot)...)
			require.Equal(t, "active/exited", state(boot), "%v", boot)
			require.Equal(t, "active/exited", state(ready), "%v", ready)
			require.Equal(t, "running", system)
			require.Equal(t, "active/running", state(c.MustShow(ctx, slurmdUnit)))
			require.Equal(t, []string{
				"nodeBootstrapped/hang-once first=1 slurmd=inactive",
				"nodeBootstrapped/hang-once first=1 slurmd=inactive",
				"nodeReady/ready first=1 slurmd=active",
			}, n.runs())
			require.Contains(t, n.scriptLog("nodeBootstrapped", "hang-once"), "second run")
			n.poweroff(ctx, c)
		})
	}
}

// requireSkipped: the nodeReady oneshot did not run because slurmd is not running
// (ExecCondition=), and is not failed.
func requireSkipped(t *testing.T, ctx context.Context, c *nspawn.Container) {
	t.Helper()
	u := c.WaitUnit(ctx, readyUnit, nspawn.Ended)
	j := c.Journal(ctx, "-u", readyUnit, "-u", slurmdUnit, "-u", bootUnit) + c.MustRun(ctx, "systemctl", "cat", readyUnit)
	require.Equal(t, "inactive/dead", state(u), "%v\n%s", u, j)
	require.Equal(t, "exec-condition", u.Result, "%v\n%s", u, j)
}

// eventually polls cond (every 50 ms) until it holds; the test fails when ctx ends first.
func eventually(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("%s: %v", what, ctx.Err())
		case <-tick.C:
		}
	}
}

// TestPoweroffDuringStage: the node is shut down while a FIRST_BOOT_ONLY nodeBootstrapped
// script runs. systemd stops the unit (the executor ends the script's group and saves the
// state) and the container powers off; on the next boot the interrupted script runs again
// (its first run never ended), and the boot completes.
func TestPoweroffDuringStage(t *testing.T) {
	t.Parallel()
	for _, m := range modes {
		t.Run(m.String(), func(t *testing.T) {
			t.Parallel()
			ctx := testContext(t)
			n := newNode(t, m)
			hang := `if [ ! -e ` + marksDir + `/hung ]; then touch ` + marksDir + `/hung; exec sleep 600; fi; echo second run`
			n.configure([]script{{name: "hang-once", body: hang}}, []script{ok("ready")})
			c := n.boot(ctx)
			eventually(t, ctx, "the script started", func() bool {
				_, err := os.Stat(filepath.Join(n.dir, "marks", "hung"))
				return err == nil
			})
			n.poweroff(ctx, c)
			require.Contains(t, n.executorLog(), "interrupted")

			c = n.boot(ctx)
			boot, ready, system := waitDone(ctx, c, m)
			require.Equal(t, "active/exited", state(boot), "%v", boot)
			require.Equal(t, 0, boot.ExecMainStatus, "%v", boot)
			require.Equal(t, "active/exited", state(ready), "%v", ready)
			require.Equal(t, "running", system)
			require.Equal(t, []string{
				"nodeBootstrapped/hang-once first=1 slurmd=inactive",
				"nodeBootstrapped/hang-once first=0 slurmd=inactive",
				"nodeReady/ready first=0 slurmd=active",
			}, n.runs())
			require.Contains(t, n.scriptLog("nodeBootstrapped", "hang-once"), "second run")
			n.poweroff(ctx, c)
		})
	}
}

// TestInvalidConfiguration: a configuration document with a mistake: the executor exits 2
// before anything runs, the unit fails, slurmd does not start (a node whose bootstrap could
// not run takes no jobs), and the journal names the JSON path of the mistake.
func TestInvalidConfiguration(t *testing.T) {
	t.Parallel()
	for _, m := range modes {
		t.Run(m.String(), func(t *testing.T) {
			t.Parallel()
			ctx := testContext(t)
			n := newNode(t, m)
			n.files.Set("/config.json", []byte(`{"stages": {"nodeBootstrapped": [{"name": "x",
				"scriptSource": {"scriptLocation": "`+n.srv.URL+`/x.sh"}, "executionPolicies": "EVERY_BOOT"}]}}`))
			c := n.boot(ctx)
			boot := c.WaitUnit(ctx, bootUnitOf(m), nspawn.Ended)
			require.Equal(t, "failed/failed", state(boot), "%v", boot)
			require.Equal(t, 2, boot.ExecMainStatus, "%v", boot)
			requireSystem(t, ctx, c, "degraded")
			require.Empty(t, c.MustShow(ctx, slurmdUnit).InvocationID, "slurmd started with an invalid configuration")
			require.Contains(t, c.Journal(ctx, "-u", bootUnitOf(m), "-o", "cat"), "stages.nodeBootstrapped[0]")
			require.Empty(t, n.runs())
			n.poweroff(ctx, c)
		})
	}
}
