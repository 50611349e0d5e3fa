package boot

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/exitcode"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/slurm"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/stage"
	"github.com/pcs-lifecycle/pcs-lifecycle/pkg/lifecycle"
)

const (
	boot  = lifecycle.StageNodeBootstrapped
	ready = lifecycle.StageNodeReady
)

func TestDaemonRunsTheBootInOrder(t *testing.T) {
	r := newRig(t, Config{ExtendTimeout: 90 * time.Second})
	err := r.boot.Daemon(context.Background())
	require.NoError(t, err)
	require.Equal(t, []string{
		"EXTEND_TIMEOUT_USEC=90000000",
		"STATUS=downloading scripts",
		"prefetch",
		"stage nodeBootstrapped",
		"hook nodeBootstrapped exit=0 (more)",
		"READY=1",
		"STATUS=waiting for Slurm registration of compute-1",
		"wait compute-1",
		"stage nodeReady",
		"hook nodeReady exit=0",
		"STATUS=done: exit 0",
	}, r.ev.all())
	var kinds []string
	for _, s := range r.steps {
		kinds = append(kinds, string(s.Kind)+":"+s.Detail)
	}
	require.Equal(t, []string{"started:daemon", "ready:", "registration:registered"}, kinds)
}

func TestDaemonWorstStageIsTheExitCode(t *testing.T) {
	r := newRig(t, Config{})
	r.stages.outcomes[boot] = fail(boot, "warn", lifecycle.Continue, 5)
	err := r.boot.Daemon(context.Background())
	require.Equal(t, exitcode.Failed, exitcode.Code(err))
	require.Contains(t, r.ev.all(), "READY=1", "a CONTINUE failure lets slurmd start")
	require.Contains(t, r.ev.all(), "comment pcs-lifecycle: nodeBootstrapped/warn exit=5", "the failure shows in Slurm")
}

func TestDaemonTerminateInBootstrappedSendsNoReady(t *testing.T) {
	console := filepath.Join(t.TempDir(), "console")
	r := newRig(t, Config{OnTerminate: "poweroff", Console: console})
	r.stages.outcomes[boot] = fail(boot, "fatal", lifecycle.Terminate, 9)
	err := r.boot.Daemon(context.Background())
	require.Equal(t, exitcode.Terminate, exitcode.Code(err))
	ev := r.ev.all()
	require.NotContains(t, ev, "READY=1")
	require.Equal(t, -1, r.ev.index("wait"), "no registration wait after a TERMINATE")
	require.Equal(t, -1, r.ev.index("stage nodeReady"))
	require.Contains(t, ev, "STATUS=TERMINATE: the node must be replaced")
	require.Contains(t, ev, "hook nodeBootstrapped exit=4", "a TERMINATE'd nodeBootstrapped is the daemon's last stage")
	require.Equal(t, "exec systemctl poweroff", ev[len(ev)-1], "the action comes last")
	require.Contains(t, r.stderr.String(), "pcs-lifecycle: TERMINATE: nodeBootstrapped/fatal exit=9\n", "one prefix")
	got, err := os.ReadFile(console)
	require.NoError(t, err)
	require.Equal(t, r.stderr.String(), string(got), "the console gets the same summary")
	require.NoFileExists(t, r.boot.Layout.Console(), "a sandbox (--root) has no console of its own")
}

// The defect of issue 7: with --hold-jobs-until-ready, a nodeReady TERMINATE without
// --drain-on-failure left the node resumed.
func TestHoldThenTerminateLeavesTheNodeDrained(t *testing.T) {
	r := newRig(t, Config{HoldJobs: true, OnTerminate: "command:notify-ops"})
	r.stages.outcomes[ready] = fail(ready, "gpu-check", lifecycle.Terminate, 4)
	err := r.boot.Stage(context.Background(), ready)
	require.Equal(t, exitcode.Terminate, exitcode.Code(err))
	require.True(t, r.slurm.drained, "a TERMINATE'd node was resumed")
	require.Equal(t, "pcs-lifecycle: nodeReady/gpu-check exit=4", r.slurm.reason)
	require.Equal(t, []string{
		"wait compute-1",
		"drain " + HoldReason,
		"stage nodeReady",
		"comment pcs-lifecycle: nodeReady/gpu-check exit=4",
		"replace drain pcs-lifecycle: nodeReady/gpu-check exit=4",
		"hook nodeReady exit=4",
		"exec /bin/sh -c notify-ops",
	}, r.calls())
}

func TestTerminateWithoutHoldDrainsTheNode(t *testing.T) {
	r := newRig(t, Config{})
	r.stages.outcomes[ready] = fail(ready, "gpu-check", lifecycle.Terminate, 4)
	require.Equal(t, exitcode.Terminate, exitcode.Code(r.boot.Stage(context.Background(), ready)))
	require.True(t, r.slurm.drained)
	require.Equal(t, "pcs-lifecycle: nodeReady/gpu-check exit=4", r.slurm.reason)
}

func TestOperatorDrainIsLeftAlone(t *testing.T) {
	r := newRig(t, Config{HoldJobs: true, DrainOnFailure: true})
	r.slurm.drained, r.slurm.reason = true, "operator maintenance"
	r.stages.outcomes[ready] = fail(ready, "gpu-check", lifecycle.Terminate, 4)
	require.Equal(t, exitcode.Terminate, exitcode.Code(r.boot.Stage(context.Background(), ready)))
	require.True(t, r.slurm.drained)
	require.Equal(t, "operator maintenance", r.slurm.reason)
	require.Equal(t, -1, r.ev.index("drain"))
	require.Equal(t, -1, r.ev.index("replace"))
	require.Equal(t, -1, r.ev.index("resume"))
	require.Contains(t, r.calls(), "comment pcs-lifecycle: nodeReady/gpu-check exit=4")
}

func TestHoldIsLiftedAfterSuccess(t *testing.T) {
	r := newRig(t, Config{HoldJobs: true})
	require.NoError(t, r.boot.Stage(context.Background(), ready))
	require.False(t, r.slurm.drained)
	require.Equal(t, []string{"wait compute-1", "drain " + HoldReason, "stage nodeReady", "resume", "hook nodeReady exit=0"}, r.calls())
}

func TestEarlierFailureIsShownOnceRegistered(t *testing.T) {
	// nodeReady has no script, but nodeBootstrapped failed: the registration is awaited to
	// show it (per-stage mode runs the nodeReady unit whatever it holds).
	r := newRig(t, Config{DrainOnFailure: true})
	r.stages.scripts[ready] = false
	r.stages.earlier = fail(boot, "bad-boot", lifecycle.StopSequence, 8).Failures
	require.NoError(t, r.boot.Stage(context.Background(), ready))
	require.Equal(t, []string{
		"wait compute-1",
		"stage nodeReady",
		"comment pcs-lifecycle: nodeBootstrapped/bad-boot exit=8",
		"drain pcs-lifecycle: nodeBootstrapped/bad-boot exit=8",
		"hook nodeReady exit=0",
	}, r.calls())
}

func TestCommentNamesTheWorstFailure(t *testing.T) {
	r := newRig(t, Config{})
	r.stages.earlier = fail(boot, "warn", lifecycle.Continue, 1).Failures
	r.stages.outcomes[ready] = fail(ready, "fatal", lifecycle.Terminate, 2)
	require.Equal(t, exitcode.Terminate, exitcode.Code(r.boot.Stage(context.Background(), ready)))
	require.Equal(t, "pcs-lifecycle: nodeReady/fatal exit=2 (+1 more)", r.slurm.comment)
	require.Equal(t, "pcs-lifecycle: nodeReady/fatal exit=2", r.slurm.reason)
}

func TestNothingToWaitFor(t *testing.T) {
	r := newRig(t, Config{})
	r.stages.scripts[ready] = false
	require.NoError(t, r.boot.Stage(context.Background(), ready))
	require.Equal(t, []string{"stage nodeReady", "hook nodeReady exit=0"}, r.calls())
}

func TestSettledStageSkipsTheRegistration(t *testing.T) {
	r := newRig(t, Config{HoldJobs: true})
	r.stages.settled[ready] = true
	r.stages.outcomes[ready] = stage4Refused()
	require.Equal(t, exitcode.Terminate, exitcode.Code(r.boot.Stage(context.Background(), ready)))
	require.Equal(t, 0, r.slurm.waitCalls)
	require.Equal(t, -1, r.ev.index("drain"))
}

func stage4Refused() (o stageOutcome) {
	o.Stage, o.ExitCode = ready, exitcode.Terminate
	return o
}

func TestRegistrationTimeoutIsRecorded(t *testing.T) {
	r := newRig(t, Config{})
	r.slurm.waitErr = &slurm.TimeoutError{Node: "compute-1", Timeout: time.Minute}
	err := r.boot.Stage(context.Background(), ready)
	require.Equal(t, exitcode.Internal, exitcode.Code(err))
	require.ErrorIs(t, err, slurm.ErrRegistrationTimeout, "the exit error wraps its cause")
	require.Contains(t, err.Error(), "did not register")
	require.Equal(t, []string{"wait compute-1", "record not_registered nodeReady", "hook nodeReady error=1"}, r.calls())
	require.Equal(t, "timed out", r.steps[len(r.steps)-1].Detail)
	require.NotEmpty(t, r.stages.recorded)
}

func TestSlurmNotConfiguredRunsAtOnce(t *testing.T) {
	r := newRig(t, Config{HoldJobs: true, DrainOnFailure: true})
	r.slurm.waitErr = slurm.ErrNoConfig
	r.stages.outcomes[ready] = fail(ready, "x", lifecycle.Continue, 1)
	require.Equal(t, exitcode.Failed, exitcode.Code(r.boot.Stage(context.Background(), ready)))
	require.Equal(t, []string{"wait compute-1", "stage nodeReady", "hook nodeReady exit=3"}, r.calls())
}

func TestRegistrationTimeoutZeroAsksOnce(t *testing.T) {
	r := newRig(t, Config{RegistrationTimeout: -1})
	r.boot.RegistrationTimeout = 0
	r.boot.HoldJobs = true
	r.slurm.stateErr = slurm.ErrUnreachable
	require.NoError(t, r.boot.Stage(context.Background(), ready))
	require.Equal(t, 0, r.slurm.waitCalls)
	require.Equal(t, []string{"stage nodeReady", "hook nodeReady exit=0"}, r.calls(), "no hold on a Slurm that does not answer")
}

func TestSignalDuringRegistrationWait(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	r := newRig(t, Config{})
	r.slurm.onWait = func() { cancel(&exitcode.SignalCause{Signal: os.Interrupt}) }
	err := r.boot.Stage(ctx, ready)
	require.Equal(t, exitcode.SIGINT, exitcode.Code(err))
	require.Contains(t, err.Error(), "nodeReady interrupted (received interrupt)")
	require.Equal(t, -1, r.ev.index("stage"), "no script starts after a signal")
	require.Len(t, r.ended, 1, "the interrupted stage is reported")
	require.Equal(t, exitcode.SIGINT, exitcode.Code(r.ended[0].Err))
	require.True(t, r.ended[0].Outcome.Interrupted)
}

func TestSignalDuringBootstrappedSendsNoReady(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	r := newRig(t, Config{})
	r.stages.cancel = func() { cancel(errors.New("SIGTERM")) }
	err := r.boot.Daemon(ctx)
	require.Equal(t, exitcode.SIGTERM, exitcode.Code(err))
	require.NotContains(t, r.ev.all(), "READY=1")
}

func TestExecutorFailureIsExitOne(t *testing.T) {
	r := newRig(t, Config{})
	disk := errors.New("no space left on device")
	r.stages.runErr = disk
	err := r.boot.Stage(context.Background(), boot)
	require.Equal(t, exitcode.Internal, exitcode.Code(err))
	require.ErrorIs(t, err, disk)
}

func TestExtendTimeoutUntilReady(t *testing.T) {
	r := newRig(t, Config{ExtendTimeout: 3 * time.Second})
	started := make(chan struct{})
	release := make(chan struct{})
	r.stages.outcomes[boot] = stageOutcome{Stage: boot}
	r.boot.Stages = &blockingStages{fakeStages: r.stages, started: started, release: release}
	done := make(chan error)
	go func() { done <- r.boot.Daemon(context.Background()) }()
	<-started
	r.clock.ticks <- time.Time{} // the ticker fires while nodeBootstrapped runs: one more extension
	close(release)
	require.NoError(t, <-done)
	<-r.clock.stopped // the ticker was stopped
	ev := r.ev.all()
	n := 0
	for _, l := range ev[:r.ev.index("READY=1")] {
		if l == "EXTEND_TIMEOUT_USEC=3000000" {
			n++
		}
	}
	require.Equal(t, 2, n, "%v", ev)
	for _, l := range ev[r.ev.index("READY=1"):] {
		require.NotEqual(t, "EXTEND_TIMEOUT_USEC=3000000", l, "extension after READY=1")
	}
}

// blockingStages holds nodeBootstrapped until release.
type blockingStages struct {
	*fakeStages
	started, release chan struct{}
}

func (b *blockingStages) RunStage(ctx context.Context, name string) (stageOutcome, error) {
	if name == boot {
		close(b.started)
		<-b.release
	}
	return b.fakeStages.RunStage(ctx, name)
}

func TestStageBootstrappedTerminateActs(t *testing.T) {
	r := newRig(t, Config{OnTerminate: "poweroff"})
	r.stages.outcomes[boot] = fail(boot, "fatal", lifecycle.Terminate, 1)
	require.Equal(t, exitcode.Terminate, exitcode.Code(r.boot.Stage(context.Background(), boot)))
	require.Equal(t, []string{"stage nodeBootstrapped", "hook nodeBootstrapped exit=4", "exec systemctl poweroff"}, r.calls())
}

func TestAlreadyRanTerminateDoesNotActAgain(t *testing.T) {
	r := newRig(t, Config{OnTerminate: "poweroff"})
	o := fail(boot, "fatal", lifecycle.Terminate, 1)
	o.AlreadyRan = true
	r.stages.outcomes[boot] = o
	require.Equal(t, exitcode.Terminate, exitcode.Code(r.boot.Stage(context.Background(), boot)))
	require.Equal(t, -1, r.ev.index("exec"))
}

type stageOutcome = stage.Outcome
