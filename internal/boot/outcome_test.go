package boot

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/stage"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/state"
	"github.com/pcs-lifecycle/pcs-lifecycle/pkg/lifecycle"
)

// TestDecideSlurm covers every combination of the inputs (2 x 2 x 4 x 2 x 2 = 64 rows).
func TestDecideSlurm(t *testing.T) {
	type row struct {
		hold, drainOnFailure bool
		worst                Severity
		operatorDrain        bool
		answering            bool
		want                 string // "-", or: comment, drain, drain(replace hold), resume
	}
	table := []row{
		// Slurm answering, no operator drain.
		{false, false, NoFailure, false, true, "-"},
		{false, true, NoFailure, false, true, "-"},
		{true, false, NoFailure, false, true, "resume"},
		{true, true, NoFailure, false, true, "resume"},
		{false, false, FailedContinue, false, true, "comment"},
		{false, true, FailedContinue, false, true, "comment drain"},
		{true, false, FailedContinue, false, true, "comment resume"},
		{true, true, FailedContinue, false, true, "comment drain(replace hold)"},
		{false, false, FailedStopSequence, false, true, "comment"},
		{false, true, FailedStopSequence, false, true, "comment drain"},
		{true, false, FailedStopSequence, false, true, "comment resume"},
		{true, true, FailedStopSequence, false, true, "comment drain(replace hold)"},
		{false, false, FailedTerminate, false, true, "comment drain"},
		{false, true, FailedTerminate, false, true, "comment drain"},
		{true, false, FailedTerminate, false, true, "comment drain(replace hold)"}, // issue 7: was resumed
		{true, true, FailedTerminate, false, true, "comment drain(replace hold)"},
		// Slurm answering, an operator's drain: only the Comment.
		{false, false, NoFailure, true, true, "-"},
		{false, true, NoFailure, true, true, "-"},
		{true, false, NoFailure, true, true, "-"},
		{true, true, NoFailure, true, true, "-"},
		{false, false, FailedContinue, true, true, "comment"},
		{false, true, FailedContinue, true, true, "comment"},
		{true, false, FailedContinue, true, true, "comment"},
		{true, true, FailedContinue, true, true, "comment"},
		{false, false, FailedStopSequence, true, true, "comment"},
		{false, true, FailedStopSequence, true, true, "comment"},
		{true, false, FailedStopSequence, true, true, "comment"},
		{true, true, FailedStopSequence, true, true, "comment"},
		{false, false, FailedTerminate, true, true, "comment"},
		{false, true, FailedTerminate, true, true, "comment"},
		{true, false, FailedTerminate, true, true, "comment"},
		{true, true, FailedTerminate, true, true, "comment"},
		// Slurm not answering: nothing, whatever else.
		{false, false, NoFailure, false, false, "-"},
		{false, true, NoFailure, false, false, "-"},
		{true, false, NoFailure, false, false, "-"},
		{true, true, NoFailure, false, false, "-"},
		{false, false, FailedContinue, false, false, "-"},
		{false, true, FailedContinue, false, false, "-"},
		{true, false, FailedContinue, false, false, "-"},
		{true, true, FailedContinue, false, false, "-"},
		{false, false, FailedStopSequence, false, false, "-"},
		{false, true, FailedStopSequence, false, false, "-"},
		{true, false, FailedStopSequence, false, false, "-"},
		{true, true, FailedStopSequence, false, false, "-"},
		{false, false, FailedTerminate, false, false, "-"},
		{false, true, FailedTerminate, false, false, "-"},
		{true, false, FailedTerminate, false, false, "-"},
		{true, true, FailedTerminate, false, false, "-"},
		{false, false, NoFailure, true, false, "-"},
		{false, true, NoFailure, true, false, "-"},
		{true, false, NoFailure, true, false, "-"},
		{true, true, NoFailure, true, false, "-"},
		{false, false, FailedContinue, true, false, "-"},
		{false, true, FailedContinue, true, false, "-"},
		{true, false, FailedContinue, true, false, "-"},
		{true, true, FailedContinue, true, false, "-"},
		{false, false, FailedStopSequence, true, false, "-"},
		{false, true, FailedStopSequence, true, false, "-"},
		{true, false, FailedStopSequence, true, false, "-"},
		{true, true, FailedStopSequence, true, false, "-"},
		{false, false, FailedTerminate, true, false, "-"},
		{false, true, FailedTerminate, true, false, "-"},
		{true, false, FailedTerminate, true, false, "-"},
		{true, true, FailedTerminate, true, false, "-"},
	}
	seen := map[string]bool{}
	for _, tc := range table {
		name := fmt.Sprintf("hold=%t/drain-on-failure=%t/worst=%s/operator-drain=%t/answering=%t",
			tc.hold, tc.drainOnFailure, tc.worst, tc.operatorDrain, tc.answering)
		require.False(t, seen[name], "row %s twice", name)
		seen[name] = true
		t.Run(name, func(t *testing.T) {
			got := DecideSlurm(SlurmFacts{HoldAsked: tc.hold, DrainOnFailure: tc.drainOnFailure, Worst: tc.worst,
				OperatorDrain: tc.operatorDrain, SlurmAnswering: tc.answering})
			require.Equal(t, tc.want, describe(got))
			if tc.worst == FailedTerminate {
				require.False(t, got.Resume, "a TERMINATE'd node is never resumed")
			}
		})
	}
	require.Len(t, seen, 64, "every combination")
}

func describe(o SlurmOutcome) string {
	var w []string
	if o.Comment {
		w = append(w, "comment")
	}
	switch {
	case o.Drain && o.ReplaceHold:
		w = append(w, "drain(replace hold)")
	case o.Drain:
		w = append(w, "drain")
	case o.ReplaceHold:
		w = append(w, "replace hold without drain")
	}
	if o.Resume {
		w = append(w, "resume")
	}
	if len(w) == 0 {
		return "-"
	}
	return strings.Join(w, " ")
}

func TestWorstFailure(t *testing.T) {
	f := func(name string, o lifecycle.OnError) stage.Failure {
		return stage.Failure{Stage: lifecycle.StageNodeReady, Script: name, OnError: o}
	}
	_, sev := worstFailure(nil)
	require.Equal(t, NoFailure, sev)
	w, sev := worstFailure([]stage.Failure{f("a", lifecycle.Continue), f("b", lifecycle.StopSequence), f("c", lifecycle.StopSequence)})
	require.Equal(t, FailedStopSequence, sev)
	require.Equal(t, "b", w.Script, "the first of the worst")
	w, sev = worstFailure([]stage.Failure{f("a", lifecycle.Continue), f("t", lifecycle.Terminate)})
	require.Equal(t, FailedTerminate, sev)
	require.Equal(t, "t", w.Script)
}

func TestFailureText(t *testing.T) {
	base := stage.Failure{Stage: "nodeReady", Script: "gpu check", ExitCode: 7}
	require.Equal(t, "pcs-lifecycle: nodeReady/gpu check exit=7", FailureText(base))
	sig := base
	sig.Signal = "KILL"
	require.Equal(t, "pcs-lifecycle: nodeReady/gpu check exit=signal:KILL", FailureText(sig))
	dl := base
	dl.Status = state.ScriptDownloadFailed
	require.Equal(t, "pcs-lifecycle: nodeReady/gpu check download failed", FailureText(dl))
}

func TestStageTimeouts(t *testing.T) {
	require.Equal(t, map[string]time.Duration{lifecycle.StageNodeBootstrapped: 30 * time.Minute}, StageTimeouts(lifecycle.StageNodeReady, nil),
		"nodeReady has no limit unless given")
	d := 5 * time.Minute
	require.Equal(t, map[string]time.Duration{lifecycle.StageNodeBootstrapped: 30 * time.Minute, lifecycle.StageNodeReady: d},
		StageTimeouts(lifecycle.StageNodeReady, &d))
	require.Equal(t, map[string]time.Duration{lifecycle.StageNodeBootstrapped: d}, StageTimeouts(lifecycle.StageNodeBootstrapped, &d))
	zero := time.Duration(0)
	require.Equal(t, map[string]time.Duration{lifecycle.StageNodeBootstrapped: 0}, StageTimeouts(lifecycle.StageNodeBootstrapped, &zero),
		"--stage-timeout 0 lifts the limit")
}
