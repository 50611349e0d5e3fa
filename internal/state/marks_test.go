package state_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/state"
)

// Failures are counted per script across boots, from the journal as from the snapshot;
// download failures count, successes and skips do not.
func TestFailuresCounted(t *testing.T) {
	snap, journal := paths(t)
	s := newStore(t, snap, journal)
	startEnd(t, s, "b1", "nodeBootstrapped", "a", 2)
	startEnd(t, s, "b1", "nodeBootstrapped", "b", 0)
	require.NoError(t, s.Record(&state.Event{BootID: "b1", Stage: "nodeBootstrapped",
		Run: &state.ScriptRun{Name: "c", Status: state.ScriptDownloadFailed, Error: "404"}}, true))
	require.NoError(t, s.Record(&state.Event{BootID: "b1", Stage: "nodeBootstrapped",
		Run: &state.ScriptRun{Name: "d", Status: state.ScriptSkipped}}, false))
	s.State.EnsureBoot("b2", time.Now()).Stages["nodeBootstrapped"] = &state.StageRun{Status: state.StageRunning}
	require.NoError(t, s.Save())
	startEnd(t, s, "b2", "nodeBootstrapped", "a", 1)
	for _, st := range []*state.State{s.State, mustRead(t, snap, journal)} {
		got := map[string]int{}
		for k, h := range st.Scripts {
			got[k] = h.Failures
		}
		require.Equal(t, map[string]int{"nodeBootstrapped/a": 2, "nodeBootstrapped/b": 0, "nodeBootstrapped/c": 1, "nodeBootstrapped/d": 0}, got)
		require.Equal(t, 2, st.Scripts["nodeBootstrapped/a"].Runs)
	}
}

// Marks and the evidence outcome survive a save and read; the marks of a boot are bounded.
func TestMarks(t *testing.T) {
	snap, journal := paths(t)
	s := newStore(t, snap, journal)
	b := s.State.Boot("b1")
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	for i := 0; i < state.MaxMarks+5; i++ {
		b.AddMark(state.Mark{Kind: state.MarkExecutorStarted, At: t0.Add(time.Duration(i) * time.Second), Detail: "run"})
	}
	b.AddMark(state.Mark{Kind: state.MarkRegistrationWait, Stage: "nodeReady", At: t0, DurationMS: 1500, Detail: "registered"})
	b.Evidence = &state.Evidence{At: t0, Stage: "nodeReady", OK: false, Error: "timeout"}
	require.NoError(t, s.Save())
	st := mustRead(t, snap, journal)
	rb := st.Boot("b1")
	require.Len(t, rb.Marks, state.MaxMarks)
	require.Equal(t, t0.Add(6*time.Second), rb.Marks[0].At, "the oldest are dropped")
	m := rb.LastMark(state.MarkRegistrationWait, "nodeReady")
	require.NotNil(t, m)
	require.EqualValues(t, 1500, m.DurationMS)
	require.Nil(t, rb.LastMark(state.MarkReady, ""))
	require.Equal(t, "timeout", rb.Evidence.Error)
}
