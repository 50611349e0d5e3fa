package state_test

import (
	"testing"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/state"
)

// TestEndSurvivesResumedSkip: a stage resumed after a kill records the scripts that ended
// before it as skipped ("already ran this boot"); the end must stay, or a second resumption
// in the same boot runs them again (found by internal/reliability's crash loop: a
// FIRST_BOOT_ONLY script ran twice on the first boot after two kills).
func TestEndSurvivesResumedSkip(t *testing.T) {
	snap, journal := paths(t)
	s := newStore(t, snap, journal)
	startEnd(t, s, "b1", "nodeBootstrapped", "a", 0)
	for _, status := range []state.ScriptStatus{state.ScriptSkipped, state.ScriptNotRun} {
		if err := s.Record(&state.Event{BootID: "b1", Stage: "nodeBootstrapped",
			Run: &state.ScriptRun{Name: "a", Status: status, Reason: "already ran this boot"}}, false); err != nil {
			t.Fatal(err)
		}
	}
	for _, st := range []*state.State{s.State, mustRead(t, snap, journal)} {
		r := st.Boot("b1").Stages["nodeBootstrapped"].Script("a")
		if r == nil || r.Status != state.ScriptSucceeded {
			t.Fatalf("the end of a was replaced: %+v", r)
		}
		if h := st.Scripts[state.Key("nodeBootstrapped", "a")]; !h.Ended || h.Runs != 1 {
			t.Fatalf("history: %+v", h)
		}
	}
	// A skip of a script that never ran in this stage run is recorded as such.
	if err := s.Record(&state.Event{BootID: "b1", Stage: "nodeBootstrapped",
		Run: &state.ScriptRun{Name: "b", Status: state.ScriptSkipped, Reason: "FIRST_BOOT_ONLY and this is not the first boot"}}, false); err != nil {
		t.Fatal(err)
	}
	if r := s.State.Boot("b1").Stages["nodeBootstrapped"].Script("b"); r == nil || r.Status != state.ScriptSkipped {
		t.Fatalf("skip of b: %+v", r)
	}
}

func mustRead(t *testing.T, snap, journal string) *state.State {
	t.Helper()
	st, err := state.Read(snap, journal)
	if err != nil {
		t.Fatal(err)
	}
	return st
}
