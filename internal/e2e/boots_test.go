package e2e_test

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// bootScript prints PCS_IS_FIRST_BOOT and its first argument.
func bootScript() []byte {
	return sh(`echo "first=$PCS_IS_FIRST_BOOT label=$1"`)
}

// waitScript prints its pgid and "waiting", then polls until release exists.
func waitScript(release string) []byte {
	return sh(fmt.Sprintf(`echo "pgid=$$"
echo "first=$PCS_IS_FIRST_BOOT"
echo waiting
while [ ! -e %s ]; do sleep 0.05; done
echo released`, release))
}

// outputs is the output of every run of a script, in order.
func (n *node) outputs(stage, name string) []string {
	var out []string
	for _, r := range n.runs(stage, name) {
		out = append(out, r.output)
	}
	return out
}

// TestPoliciesOverThreeBoots: FIRST_BOOT_ONLY runs on the first boot only, EVERY_BOOT on
// each; PCS_IS_FIRST_BOOT is 1 on the first boot and 0 after.
func TestPoliciesOverThreeBoots(t *testing.T) {
	t.Parallel()
	b := newBucket(t)
	n := newNode(t)
	loc := b.put(t, "boot.sh", bootScript())
	cfg := n.writeConfig(stages(
		[]scriptDef{script("b-once", loc).args("b-once"), script("b-every", loc).every().args("b-every")},
		[]scriptDef{script("r-once", loc).firstOnly().args("r-once"), script("r-every", loc).every().args("r-every")}))
	for boot := 1; boot <= 3; boot++ {
		if boot > 1 {
			n.reboot()
			n.requireRun(0, "run", "--stage", bootstrapped)
		} else {
			n.requireRun(0, "run", "--stage", bootstrapped, "--config", cfg)
		}
		n.requireRun(0, "run", "--stage", ready)
		st, code := n.status()
		require.Equal(t, 0, code)
		require.Equal(t, boot == 1, st.Node.FirstBoot)
		require.Equal(t, boot, st.Node.Boots)
		require.Equal(t, n.bootID(), st.Node.BootID)
		for _, s := range []struct{ stage, name string }{{bootstrapped, "b-once"}, {ready, "r-once"}} {
			sc := scriptOf(t, st, s.stage, s.name)
			require.Equal(t, 1, sc.Runs)
			if boot == 1 {
				require.Equal(t, "succeeded", sc.ThisBoot)
			} else {
				require.Equal(t, "skipped", sc.ThisBoot)
				require.Contains(t, sc.Reason, "not the first boot")
			}
		}
		require.Equal(t, boot, scriptOf(t, st, bootstrapped, "b-every").Runs)
	}
	require.Equal(t, []string{"first=1 label=b-once\n"}, n.outputs(bootstrapped, "b-once"))
	require.Equal(t, []string{"first=1 label=r-once\n"}, n.outputs(ready, "r-once"))
	require.Equal(t, []string{"first=1 label=b-every\n", "first=0 label=b-every\n", "first=0 label=b-every\n"}, n.outputs(bootstrapped, "b-every"))
	require.Equal(t, []string{"first=1 label=r-every\n", "first=0 label=r-every\n", "first=0 label=r-every\n"}, n.outputs(ready, "r-every"))
	require.Len(t, n.find("message", "skipping script", "script", "b-once", "reason", "FIRST_BOOT_ONLY and this is not the first boot"), 2)
	require.Len(t, n.find("message", "skipping script", "script", "r-once", "reason~", "not the first boot"), 2)
}

// TestFirstBootOnlyInterrupted: a FIRST_BOOT_ONLY script cut short (the executor and the
// script killed, as by a power loss) runs again on the next boot; one that finished never does.
func TestFirstBootOnlyInterrupted(t *testing.T) {
	t.Parallel()
	b := newBucket(t)
	n := newNode(t)
	release := filepath.Join(t.TempDir(), "release")
	cfg := n.writeConfig(stages([]scriptDef{
		script("done-once", b.put(t, "done.sh", okScript("done-once-ran"))),
		script("cut-once", b.put(t, "cut.sh", waitScript(release))),
		script("every", b.put(t, "every.sh", bootScript())).every(),
	}, nil))
	p, pg := n.startWaiting(t, "cut-once", "--config", cfg)
	r := p.powerCut(t, pg)
	require.Equal(t, 128+int(syscall.SIGKILL), r.code)

	st, code := n.status()
	require.Equal(t, 3, code, "a stage cut short counts as 3")
	require.Equal(t, "interrupted", stageOf(t, st, bootstrapped).Status)
	require.Equal(t, "interrupted", scriptOf(t, st, bootstrapped, "cut-once").ThisBoot)

	n.reboot()
	require.NoError(t, os.WriteFile(release, nil, 0o644))
	n.requireRun(0, "run", "--stage", bootstrapped)
	require.Len(t, n.runs(bootstrapped, "done-once"), 1, "a FIRST_BOOT_ONLY script that finished never runs again")
	cut := n.runs(bootstrapped, "cut-once")
	require.Len(t, cut, 2, "a FIRST_BOOT_ONLY script that was cut short runs on the next boot")
	require.Contains(t, cut[1].output, "released\n")
	require.Equal(t, "0", cut[1].exit)
	require.Equal(t, "1", valueAfter(cut[0].output, "first"))
	require.Equal(t, "0", valueAfter(cut[1].output, "first"), "the re-run is on a reboot")
	n.requireLog("message", "starting script", "script", "cut-once", "reason~", "interrupted")
	require.Equal(t, []string{"first=0 label=\n"}, n.outputs(bootstrapped, "every"))

	n.reboot()
	n.requireRun(0, "run", "--stage", bootstrapped)
	require.Len(t, n.runs(bootstrapped, "cut-once"), 2, "once it finished, it is done")
	require.Len(t, n.runs(bootstrapped, "done-once"), 1)
	require.Len(t, n.runs(bootstrapped, "every"), 2)
}

// TestTerminateIsFinal: after a TERMINATE every later run, in any boot, runs nothing and
// exits 4, unless --force.
func TestTerminateIsFinal(t *testing.T) {
	t.Parallel()
	b := newBucket(t)
	n := newNode(t)
	cfg := n.writeConfig(stages(
		[]scriptDef{script("fails", b.put(t, "fail.sh", failScript(1))).every(), script("after", b.put(t, "after.sh", okScript("after-ran"))).every()},
		[]scriptDef{script("ready-ok", b.put(t, "ready.sh", okScript("ready-ran"))).every()}))
	r := n.requireRun(4, "run", "--stage", bootstrapped, "--config", cfg)
	require.Contains(t, r.stderr, "fails")
	// A sandbox has no console: the summary goes to the journal only, without a warning, once
	// prefixed, and the stage's summary line ends the run.
	require.NotContains(t, r.stderr, "could not write the TERMINATE summary")
	require.Contains(t, r.stderr, "pcs-lifecycle: TERMINATE: nodeBootstrapped/fails exit=1\n")
	require.NotContains(t, r.stderr, "TERMINATE: pcs-lifecycle:")
	require.Regexp(t, `pcs-lifecycle: exit 4 for stage nodeBootstrapped after \S+: 1 ran \(1 failed\), 0 skipped, 1 not run\n$`, r.stderr)
	n.requireLog("level", "ERROR", "message", "TERMINATE: the node must be replaced; summary written to the journal (stderr)")
	n.requireLog("level", "INFO", "message", "stage summary", "stage", bootstrapped, "exit_code", "4", "not_run", "1")
	require.Empty(t, n.find("message~", "could not write"))
	require.Equal(t, "intentional failure\n", n.runs(bootstrapped, "fails")[0].output)
	require.Equal(t, "1", n.runs(bootstrapped, "fails")[0].exit)
	require.Empty(t, n.scriptLog(bootstrapped, "after"))
	n.requireLog("level", "ERROR", "script", "fails", "on_error", "Terminate", "exit_code", "1")

	st, code := n.status()
	require.Equal(t, 4, code)
	require.NotNil(t, st.Terminated)
	require.Equal(t, "fails", st.Terminated.Script)
	require.Equal(t, bootstrapped, st.Terminated.Stage)
	require.Equal(t, "terminated", stageOf(t, st, bootstrapped).Status)

	n.requireRun(4, "run", "--stage", ready)
	require.Empty(t, n.scriptLog(ready, "ready-ok"))
	n.requireLog("level", "ERROR", "stage", ready, "message~", "terminated")
	n.requireRun(4, "run", "--stage", bootstrapped)

	for i := 0; i < 2; i++ {
		n.reboot()
		n.requireRun(4, "run", "--stage", bootstrapped)
		r := n.requireRun(4, "run", "--stage", ready)
		require.Regexp(t, `pcs-lifecycle: exit 4 for stage nodeReady: nothing run, the instance was marked failed at .* by nodeBootstrapped/fails \(exit 1\); --force overrides\n$`, r.stderr)
		st, code := n.status()
		require.Equal(t, 4, code)
		for _, s := range []string{"fails", "after"} {
			sc := scriptOf(t, st, bootstrapped, s)
			require.Equal(t, "refused", sc.State)
			require.Contains(t, sc.NeverRuns, "the instance was marked failed at ")
		}
		txt := n.run("status")
		require.Contains(t, txt.stdout, "TERMINATED: the instance was marked failed at ")
		requireFits(t, txt.stdout)
	}
	require.Len(t, n.runs(bootstrapped, "fails"), 1)
	require.Empty(t, n.scriptLog(bootstrapped, "after"))
	require.Empty(t, n.scriptLog(ready, "ready-ok"))

	n.requireRun(0, "run", "--stage", ready, "--force")
	require.Equal(t, []string{"ready-ran\n"}, n.outputs(ready, "ready-ok"))
	n.requireRun(4, "run", "--stage", bootstrapped)
	require.Len(t, n.runs(bootstrapped, "fails"), 1)
}

// TestStageOncePerBoot: a stage run again in the same boot runs nothing and exits with its
// recorded result; --force runs it again.
func TestStageOncePerBoot(t *testing.T) {
	t.Parallel()
	b := newBucket(t)
	ok := b.put(t, "ok.sh", okScript("ok-ran"))
	fail := b.put(t, "fail.sh", failScript(2))
	cases := []struct {
		name    string
		onError string
		code    int
		fails   bool
	}{
		{"succeeded", "", 0, false},
		{"CONTINUE", "CONTINUE", 3, true},
		{"STOP_SEQUENCE", "STOP_SEQUENCE", 3, true},
		{"TERMINATE", "TERMINATE", 4, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			n := newNode(t)
			first := ok
			if tc.fails {
				first = fail
			}
			cfg := n.writeConfig(stages([]scriptDef{script("s1", first).onErr(tc.onError), script("s2", ok)}, nil))
			n.requireRun(tc.code, "run", "--stage", bootstrapped, "--config", cfg)
			before := n.scriptLog(bootstrapped, "s1")
			require.Len(t, n.runs(bootstrapped, "s1"), 1)

			r := n.requireRun(tc.code, "run", "--stage", bootstrapped)
			require.Equal(t, before, n.scriptLog(bootstrapped, "s1"), "nothing runs again in the same boot")
			if tc.onError != "TERMINATE" {
				require.Contains(t, r.stderr, "already ran this boot")
				n.requireLog("message~", "stage already ran this boot", "stage", bootstrapped, "exit_code", fmt.Sprint(tc.code))
			}
			_, code := n.status()
			require.Equal(t, tc.code, code)

			n.requireRun(tc.code, "run", "--stage", bootstrapped, "--force")
			require.Len(t, n.runs(bootstrapped, "s1"), 2, "--force runs the stage again")
		})
	}
}

// TestNewInstanceOnSameRoot: a new instance made from a used node's image is a first boot
// again: it needs its configuration given again and downloads every script again.
func TestNewInstanceOnSameRoot(t *testing.T) {
	t.Parallel()
	b := newBucket(t)
	w := newWeb(t)
	n := newNode(t, withCA(w))
	s3loc := b.put(t, "img.sh", sh(`echo "v1 first=$PCS_IS_FIRST_BOOT"`))
	webloc := w.put("/img.sh", okScript("https-v1"))
	cfg := n.writeConfig(stages([]scriptDef{script("s3-once", s3loc), script("https-once", webloc)}, nil))
	n.requireRun(0, "run", "--stage", bootstrapped, "--config", cfg)
	n.reboot()
	n.requireRun(0, "run", "--stage", bootstrapped)
	require.Len(t, n.runs(bootstrapped, "s3-once"), 1)
	require.Equal(t, 1, w.requests("/img.sh"))
	old := n.instance

	n.newInstance()
	r := n.requireRun(2, "run", "--stage", bootstrapped)
	require.Contains(t, r.stderr, "no configuration")
	require.Contains(t, r.stderr, n.instance)
	require.Contains(t, r.stderr, "--config")
	require.Len(t, n.runs(bootstrapped, "s3-once"), 1, "nothing runs without a configuration")

	b.put(t, "img.sh", sh(`echo "v2 first=$PCS_IS_FIRST_BOOT"`))
	n.requireRun(0, "run", "--stage", bootstrapped, "--config", cfg)
	require.Equal(t, []string{"v1 first=1\n", "v2 first=1\n"}, n.outputs(bootstrapped, "s3-once"), "downloaded again and run as a first boot")
	require.Equal(t, 2, w.requests("/img.sh"))
	n.requireLog("level", "WARN", "previous_instance_id", old, "instance_id", n.instance)
	st, code := n.status()
	require.Equal(t, 0, code)
	require.True(t, st.Node.FirstBoot)
	require.Equal(t, n.instance, st.Node.InstanceID)
}

// TestLockAndStatusWhileRunning: one executor at a time; a second waits for the lock and, past
// --lock-timeout, exits 1 naming the holder; status never blocks and shows the running script.
func TestLockAndStatusWhileRunning(t *testing.T) {
	t.Parallel()
	b := newBucket(t)
	n := newNode(t)
	release := filepath.Join(t.TempDir(), "release")
	cfg := n.writeConfig(stages([]scriptDef{
		script("done", b.put(t, "done.sh", okScript("done-ran"))),
		script("holder", b.put(t, "holder.sh", waitScript(release))),
		script("pending", b.put(t, "pending.sh", okScript("pending-ran"))),
	}, nil))
	p, _ := n.startWaiting(t, "holder", "--config", cfg)
	pid := fmt.Sprintf("pid %d", p.pid())

	st, code := n.status() // returns while the holder runs: status does not wait for the lock
	require.False(t, p.exited(), "%s", p.report())
	require.Equal(t, 3, code, "a stage still running counts as 3")
	require.True(t, st.Running)
	require.Contains(t, st.Holder, pid)
	require.Equal(t, "running", stageOf(t, st, bootstrapped).Status)
	require.Equal(t, "succeeded", scriptOf(t, st, bootstrapped, "done").ThisBoot)
	require.Equal(t, "running", scriptOf(t, st, bootstrapped, "holder").ThisBoot)
	require.Equal(t, "pending", scriptOf(t, st, bootstrapped, "pending").ThisBoot)
	txt := n.run("status")
	require.Equal(t, 3, txt.code)
	require.Contains(t, txt.stdout, "running now: "+pid)

	r := n.run("run", "--stage", bootstrapped, "--lock-timeout", "1s")
	require.Equal(t, 1, r.code, "%s", r)
	require.Contains(t, r.stderr, "gave up after 1", "it waited for the lock")
	require.Contains(t, r.stderr, pid, "the message names the holder")
	require.Contains(t, r.stderr, "run --stage "+bootstrapped)

	waiter := n.start("run", "--stage", bootstrapped, "--lock-timeout", "60s")
	n.awaitLockWait(t)
	require.False(t, waiter.exited(), "a second run waits for the lock")
	require.NoError(t, os.WriteFile(release, nil, 0o644))
	r = p.wait(t, 20*time.Second)
	require.Equal(t, 0, r.code, "%s", r)
	r = waiter.wait(t, 20*time.Second)
	require.Equal(t, 0, r.code, "%s", r)
	require.Contains(t, r.stderr, "already ran this boot")
	require.Len(t, n.runs(bootstrapped, "holder"), 1)
	require.Len(t, n.runs(bootstrapped, "pending"), 1)
	st, code = n.status()
	require.Equal(t, 0, code)
	require.False(t, st.Running)
}
