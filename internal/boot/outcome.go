package boot

import (
	"fmt"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/stage"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/state"
	"github.com/pcs-lifecycle/pcs-lifecycle/pkg/lifecycle"
)

// HoldReason is the drain reason of --hold-jobs-until-ready.
const HoldReason = "pcs-lifecycle: nodeReady running"

// Severity is the worst onError among the failures of this boot.
type Severity int

// The severities, least serious first.
const (
	NoFailure Severity = iota
	FailedContinue
	FailedStopSequence
	FailedTerminate
)

func (s Severity) String() string {
	return [...]string{"none", "CONTINUE", "STOP_SEQUENCE", "TERMINATE"}[s]
}

func severityOf(o lifecycle.OnError) Severity {
	switch o {
	case lifecycle.Terminate:
		return FailedTerminate
	case lifecycle.StopSequence:
		return FailedStopSequence
	}
	return FailedContinue
}

// SlurmFacts are what the Slurm outcome after nodeReady depends on.
type SlurmFacts struct {
	HoldAsked      bool     // --hold-jobs-until-ready
	DrainOnFailure bool     // --drain-on-failure
	Worst          Severity // the worst failure of this boot (both stages)
	OperatorDrain  bool     // the node is drained or down for a reason that is not ours
	SlurmAnswering bool     // Slurm is configured and the node registered (or answers)
}

// SlurmOutcome is what is done to the node in Slurm once nodeReady ended.
type SlurmOutcome struct {
	// Comment: set the node's Comment to the failure text.
	Comment bool
	// Drain: leave the node drained with the failure as its reason. With ReplaceHold the drain
	// swaps our hold's reason for the failure's, so no job can start in between.
	Drain, ReplaceHold bool
	// Resume: lift our hold.
	Resume bool
}

// DecideSlurm is the Slurm outcome after nodeReady. The rules:
//   - nothing is done to a node whose Slurm does not answer;
//   - any failure of this boot is shown in the Comment;
//   - an operator's drain (or DOWN) is never touched: no drain of ours, no resume;
//   - a TERMINATE always leaves the node drained with the failure as its reason (the node must
//     be replaced: it must never take a job), and so does any failure with --drain-on-failure;
//   - otherwise our hold, if asked, is lifted.
func DecideSlurm(f SlurmFacts) SlurmOutcome {
	if !f.SlurmAnswering {
		return SlurmOutcome{}
	}
	out := SlurmOutcome{Comment: f.Worst != NoFailure}
	if f.OperatorDrain {
		return out
	}
	drain := f.Worst == FailedTerminate || (f.DrainOnFailure && f.Worst != NoFailure)
	switch {
	case drain:
		out.Drain, out.ReplaceHold = true, f.HoldAsked
	case f.HoldAsked:
		out.Resume = true
	}
	return out
}

// worstFailure is the most serious of fails (the first of them when several are as serious)
// and its severity.
func worstFailure(fails []stage.Failure) (stage.Failure, Severity) {
	var worst stage.Failure
	sev := NoFailure
	for _, f := range fails {
		if s := severityOf(f.OnError); s > sev {
			worst, sev = f, s
		}
	}
	return worst, sev
}

// FailureText is a failure as the node's Comment and drain reason show it:
// "pcs-lifecycle: <stage>/<script> exit=<n>" (or signal:, or "download failed").
func FailureText(f stage.Failure) string {
	what := fmt.Sprintf("exit=%d", f.ExitCode)
	switch {
	case f.Signal != "":
		what = "exit=signal:" + f.Signal
	case f.Status == state.ScriptDownloadFailed:
		what = "download failed"
	}
	return fmt.Sprintf("pcs-lifecycle: %s/%s %s", f.Stage, f.Script, what)
}
