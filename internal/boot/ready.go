package boot

import (
	"context"
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/exitcode"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/slurm"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/stage"
	"github.com/pcs-lifecycle/pcs-lifecycle/pkg/lifecycle"
)

// nodeReady is the second half of the boot: the registration wait, the job hold, the
// nodeReady scripts, then the Slurm outcome (Comment, drain or resume).
func (b *Boot) nodeReady(ctx context.Context, _ string) (stage.Outcome, error) {
	const name = lifecycle.StageNodeReady
	// An instance a TERMINATE marked failed runs nothing (exit 4), and a stage already ended
	// this boot does not run again: neither needs the registration.
	if b.Stages.Settled(name) {
		return b.runStage(ctx, name)
	}
	answering, err := b.awaitSlurm(ctx)
	if errors.Is(err, errWaitInterrupted) {
		return b.finish(ctx, name, stage.Outcome{Stage: name, Interrupted: true}, nil)
	}
	if err != nil {
		return b.finish(ctx, name, stage.Outcome{Stage: name}, err)
	}
	held, operatorDrain := false, false
	if b.HoldJobs && answering {
		held, operatorDrain = b.hold(ctx)
	}
	out, err := b.Stages.RunStage(ctx, name)
	if err != nil || out.Interrupted {
		return b.finish(ctx, name, out, err)
	}
	fails := b.Stages.BootFailures()
	worst, sev := worstFailure(fails)
	act := DecideSlurm(SlurmFacts{HoldAsked: b.HoldJobs, DrainOnFailure: b.DrainOnFailure, Worst: sev,
		OperatorDrain: operatorDrain, SlurmAnswering: answering})
	act.ReplaceHold = act.ReplaceHold && held
	b.applySlurm(ctx, act, worst, len(fails))
	return b.finish(ctx, name, out, nil)
}

// errWaitInterrupted: a signal ended the registration wait (nothing was recorded).
var errWaitInterrupted = errors.New("registration wait interrupted")

// awaitSlurm waits for the node's registration when Slurm is needed: for the nodeReady
// scripts, the job hold, or to show an earlier failure of this boot once the node is
// registered. It reports whether Slurm answers (false: not configured, not needed, or not
// waited for and silent). A registration timeout is recorded and is an error (exit 1).
func (b *Boot) awaitSlurm(ctx context.Context) (bool, error) {
	log := b.Log.With(zap.String("stage", lifecycle.StageNodeReady))
	node := b.NodeID
	if !b.Stages.HasScripts(lifecycle.StageNodeReady) && !b.HoldJobs && len(b.Stages.BootFailures()) == 0 {
		return false, nil
	}
	if b.RegistrationTimeout == 0 {
		log.Info("not waiting for Slurm registration (--registration-timeout 0)")
		_, err := b.Slurm.NodeState(ctx, node)
		return err == nil, nil // no Comment or hold on a node whose Slurm does not answer
	}
	b.status("waiting for Slurm registration of " + node)
	t0 := b.Clock.Now()
	log.Info("waiting for the node's Slurm registration", zap.String("node", node), zap.Duration("timeout", b.RegistrationTimeout))
	last := ""
	wait := b.Wait
	if wait == nil {
		wait = nopWait{}
	}
	wait.Begin("node "+node+" to register with the Slurm controller",
		fmt.Sprintf("scontrol show node %s, every %s", node, b.RegistrationPoll), b.RegistrationTimeout)
	err := b.Slurm.WaitRegistered(ctx, node, b.RegistrationPoll, b.RegistrationTimeout, func(st slurm.State, err error) {
		msg := st.String()
		if err != nil {
			msg = err.Error()
		}
		wait.Observe(msg)
		if msg != last {
			log.Debug("registration poll", zap.String("node", node), zap.String("slurm", msg))
			last = msg
		}
	})
	wait.Done(registrationEnd(ctx, err))
	b.step(ctx, Step{Kind: StepRegistration, Stage: lifecycle.StageNodeReady, At: t0, Duration: b.since(t0), Detail: registrationEnd(ctx, err)})
	switch {
	case err == nil:
		log.Info("node registered with Slurm", zap.String("node", node), zap.Int64("duration_ms", b.since(t0).Milliseconds()))
		return true, nil
	case errors.Is(err, slurm.ErrNotConfigured):
		log.Warn("Slurm is not configured on this node; running nodeReady at once", zap.Error(err))
		return false, nil
	case errors.Is(err, slurm.ErrRegistrationTimeout):
		log.Error("node did not register with Slurm in time; no nodeReady script runs", zap.String("node", node),
			zap.Duration("timeout", b.RegistrationTimeout), zap.Error(err))
		if rerr := b.Stages.RecordRegistrationTimeout(lifecycle.StageNodeReady, err.Error()); rerr != nil {
			return false, exitcode.Wrap(exitcode.Internal, rerr)
		}
		return false, exitcode.Errorf(exitcode.Internal, "node %s did not register with Slurm within %s (--registration-timeout); nodeReady did not run: %w",
			node, b.RegistrationTimeout, err)
	case ctx.Err() != nil:
		return false, errWaitInterrupted
	}
	log.Error("cannot read the node's Slurm state", zap.Error(err))
	return false, exitcode.Errorf(exitcode.Internal, "slurm: %w", err)
}

// registrationEnd says how the registration wait ended, for the boot's timeline.
func registrationEnd(ctx context.Context, err error) string {
	switch {
	case err == nil:
		return "registered"
	case errors.Is(err, slurm.ErrNotConfigured):
		return "Slurm not configured"
	case errors.Is(err, slurm.ErrRegistrationTimeout):
		return "timed out"
	case ctx.Err() != nil:
		return "interrupted"
	}
	return err.Error()
}

// hold drains the node with HoldReason while nodeReady runs. It reports whether our hold is
// in place, and whether an operator's drain (or DOWN) was found, which is left alone.
func (b *Boot) hold(ctx context.Context) (held, operatorDrain bool) {
	log := b.Log.With(zap.String("stage", lifecycle.StageNodeReady))
	err := b.Slurm.Drain(ctx, b.NodeID, HoldReason)
	if err != nil {
		log.Warn("could not drain the node to hold jobs", zap.Error(err))
		return false, errors.Is(err, slurm.ErrForeignDrain)
	}
	log.Info("node drained while nodeReady runs", zap.String("reason", HoldReason))
	return true, false
}

// applySlurm carries out the Slurm outcome. worst is the failure the Comment and the drain
// reason name; n the number of failures this boot.
func (b *Boot) applySlurm(ctx context.Context, act SlurmOutcome, worst stage.Failure, n int) {
	log := b.Log.With(zap.String("stage", lifecycle.StageNodeReady))
	node := b.NodeID
	reason := FailureText(worst)
	if act.Comment {
		comment := reason
		if n > 1 {
			comment += fmt.Sprintf(" (+%d more)", n-1)
		}
		if err := b.Slurm.SetComment(ctx, node, comment); err != nil {
			log.Warn("could not set the node's Slurm comment", zap.Error(err))
		} else {
			log.Info("node comment set", zap.String("comment", comment))
		}
	}
	switch {
	case act.Drain:
		var err error
		if act.ReplaceHold {
			// Swap our hold's reason for the failure's: no window in which a job could start.
			err = b.Slurm.ReplaceDrain(ctx, node, HoldReason, reason)
		} else {
			err = b.Slurm.Drain(ctx, node, reason)
		}
		if err != nil {
			log.Warn("could not drain the node after a failure", zap.Error(err))
		} else {
			log.Warn("node left drained after a failure", zap.String("reason", reason))
		}
	case act.Resume:
		if err := b.Slurm.Resume(ctx, node, HoldReason); err != nil {
			log.Warn("node not resumed", zap.Error(err))
		} else {
			log.Info("node resumed after nodeReady")
		}
	}
}
