package boot

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/exitcode"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/stage"
	"github.com/pcs-lifecycle/pcs-lifecycle/pkg/lifecycle"
)

// Daemon is the whole boot under systemd (Type=notify): download, nodeBootstrapped while the
// start timeout is extended, READY=1, the registration wait, nodeReady with its Slurm outcome.
// The error carries the exit code (nil: 0). It never sends STOPPING=1: systemd would take it
// as "deactivating" and end the unit inactive instead of keeping it active (exited) under
// RemainAfterExit=yes, and a later `systemctl restart slurmd` would start the boot again.
func (b *Boot) Daemon(ctx context.Context) error {
	b.daemon = true
	b.step(ctx, Step{Kind: StepStarted, At: b.Clock.Now(), Detail: "daemon"})
	ext := b.keepExtending()
	// Until nodeBootstrapped has ended without TERMINATE, every way out leaves READY=1 unsent:
	// the unit fails and slurmd, which requires it, does not start, as in per-stage mode,
	// where a failed bootstrapped oneshot keeps slurmd down.
	defer ext.stop()
	b.status("downloading scripts")
	if err := b.Stages.Prefetch(ctx); err != nil {
		return exitcode.Errorf(exitcode.Internal, "download: %w", err)
	}
	boot, err := b.runStage(ctx, lifecycle.StageNodeBootstrapped)
	if err != nil {
		return err
	}
	if boot.ExitCode == exitcode.Terminate {
		b.status("TERMINATE: the node must be replaced")
		b.terminate(ctx, boot)
		return exitcode.Exit(exitcode.Terminate) // no READY=1: slurmd must not start
	}
	ext.stop()
	if err := b.Notify.Ready(); err != nil {
		b.Log.Warn("sd_notify READY=1 failed", zap.Error(err))
	}
	if s, ok := b.Slurm.(interface{ SlurmdStartedAt(time.Time) }); ok {
		s.SlurmdStartedAt(b.Clock.Now()) // slurmd, ordered after this unit, starts now: the registration checks count from here
	}
	b.step(ctx, Step{Kind: StepReady, At: b.Clock.Now()})
	ready, err := b.nodeReady(ctx, lifecycle.StageNodeReady)
	if err != nil {
		return err
	}
	if ready.ExitCode == exitcode.Terminate && !ready.AlreadyRan {
		b.terminate(ctx, ready)
	}
	code := exitcode.Worst(boot.ExitCode, ready.ExitCode)
	b.status("done: exit " + strconv.Itoa(code))
	return exitcode.Exit(code)
}

// Stage runs one stage, as the node's bootstrap calls it (run --stage): nodeReady with its
// registration wait and Slurm outcome. The error carries the exit code (nil: 0).
func (b *Boot) Stage(ctx context.Context, name string) error {
	b.step(ctx, Step{Kind: StepStarted, At: b.Clock.Now(), Detail: "run --stage " + name})
	run := b.runStage
	if name == lifecycle.StageNodeReady {
		run = b.nodeReady
	}
	out, err := run(ctx, name)
	if err != nil {
		return err
	}
	if out.ExitCode == exitcode.Terminate && !out.AlreadyRan {
		b.terminate(ctx, out)
	}
	return exitcode.Exit(out.ExitCode)
}

// runStage runs one stage's scripts.
func (b *Boot) runStage(ctx context.Context, name string) (stage.Outcome, error) {
	out, err := b.Stages.RunStage(ctx, name)
	return b.finish(ctx, name, out, err)
}

// finish turns an executor failure or an interruption into the error with its exit code (1,
// 130, 143) and tells the observers how the stage ended.
func (b *Boot) finish(ctx context.Context, name string, out stage.Outcome, err error) (stage.Outcome, error) {
	var coded *exitcode.Error
	switch {
	case err != nil && !errors.As(err, &coded):
		b.Log.Error("executor failed", zap.String("stage", name), zap.Error(err))
		err = exitcode.Errorf(exitcode.Internal, "%s: %w", name, err)
	case err == nil && out.Interrupted:
		code := exitcode.Interrupted(ctx)
		err = exitcode.Errorf(code, "%s interrupted (%s); state saved", name, causeOf(ctx))
		fl := b.FileLog
		if fl == nil {
			fl = b.Log
		}
		fl.Warn("interrupted; state saved: running the stage again in this boot resumes it", zap.String("stage", name),
			zap.String("cause", causeOf(ctx)), zap.Int("exit_code", code))
	}
	if err == nil && out.ExitCode == exitcode.Terminate {
		b.writeTerminateSummary(out)
	}
	goesOn := b.daemon && name == lifecycle.StageNodeBootstrapped && err == nil && out.ExitCode != exitcode.Terminate
	for _, o := range b.Observers {
		o.StageEnded(ctx, StageEnd{Stage: name, Outcome: out, Err: err, Final: !goesOn})
	}
	return out, err
}

func causeOf(ctx context.Context) string {
	if c := context.Cause(ctx); c != nil {
		return c.Error()
	}
	return "cancelled"
}

// extender keeps sending EXTEND_TIMEOUT_USEC while nodeBootstrapped runs (before READY=1
// systemd's TimeoutStartSec applies).
type extender struct {
	once sync.Once
	done chan struct{}
	wg   sync.WaitGroup
}

// keepExtending sends EXTEND_TIMEOUT_USEC=ExtendTimeout now and every third of it until stop.
func (b *Boot) keepExtending() *extender {
	e := &extender{done: make(chan struct{})}
	if b.ExtendTimeout <= 0 {
		return e
	}
	extend := func() {
		if err := b.Notify.ExtendTimeout(b.ExtendTimeout); err != nil {
			b.Log.Debug("sd_notify EXTEND_TIMEOUT_USEC failed", zap.Error(err))
		}
	}
	extend()
	tick, stop := b.Clock.Tick(b.ExtendTimeout / 3)
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		defer stop()
		for {
			select {
			case <-e.done:
				return
			case <-tick:
				extend()
			}
		}
	}()
	return e
}

// stop ends the extensions; it returns once none can be sent any more (idempotent).
func (e *extender) stop() {
	e.once.Do(func() { close(e.done) })
	e.wg.Wait()
}

// since is the time from t0 on the boot's clock.
func (b *Boot) since(t0 time.Time) time.Duration { return b.Clock.Now().Sub(t0) }
