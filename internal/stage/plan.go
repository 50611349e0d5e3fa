package stage

import (
	"fmt"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/state"
	"github.com/pcs-lifecycle/pcs-lifecycle/pkg/lifecycle"
	"github.com/pcs-lifecycle/pcs-lifecycle/pkg/status"
)

// PlanItem is what a run would do with one script.
type PlanItem struct {
	Stage  string
	Script lifecycle.Script
	Run    bool
	// State is the script's state on the planned boot in the one vocabulary of pkg/status:
	// pending (it runs), skipped, refused, or what this boot already recorded for it.
	State    string
	Reason   string
	Download bool   // it would be downloaded first
	Fetch    string // why (not) downloaded
	// NeverRuns, when set, says why the script can no longer run on this instance.
	NeverRuns string
}

// TimeFormat is how plan and status print an instant in a sentence.
const TimeFormat = "2006-01-02 15:04:05 MST"

// Plan answers, for every script, what a run of this boot (bootID) would do, from the same
// decisions run makes. st may be nil (the instance was never seen: a first boot).
// hasCopy says whether a cached file exists (cache.HasScript, or always true when st is a
// simulated first boot).
func Plan(st *state.State, hasCopy func(string) bool, doc *lifecycle.Document, instanceID, bootID string, force bool) []PlanItem {
	if st == nil || st.InstanceID != instanceID {
		st = state.New(instanceID, bootID, timeZero)
	}
	var items []PlanItem
	for _, stage := range lifecycle.Stages {
		var ran *state.StageRun
		terminated := st.Terminated != nil && !force
		if b := st.Boot(bootID); b != nil && !force {
			if sr := b.Stages[stage]; sr != nil && !sr.Status.Resumable() {
				ran = sr
			}
		}
		for _, s := range doc.Scripts(stage) {
			it := PlanItem{Stage: stage, Script: s}
			switch {
			case terminated:
				it.State, it.Reason = status.ScriptRefused, "the instance was marked failed by a TERMINATE: a run is refused (exit 4)"
				it.NeverRuns = TerminatedText(st.Terminated)
			case ran != nil:
				it.State, it.Reason = status.ScriptSkipped, "stage already ran this boot ("+string(ran.Status)+")"
				if r := ran.Script(s.Name); r != nil {
					it.State = string(r.Status)
				}
				it.NeverRuns = NeverRuns(st, bootID, stage, s)
			default:
				d := DecideIn(st, bootID, stage, s, force)
				it.Run, it.Reason = d.Run, d.Reason
				it.State = status.ScriptSkipped
				if d.Run {
					it.State = status.ScriptPending
					fd := FetchDecision(st, hasCopy, bootID, doc.ScriptCachingPolicy, stage, s.Name)
					it.Download, it.Fetch = fd.Run, fd.Reason
				} else {
					it.NeverRuns = NeverRuns(st, bootID, stage, s)
				}
			}
			items = append(items, it)
		}
	}
	return items
}

// TerminatedText says when and by what script the instance was marked failed.
func TerminatedText(t *state.Termination) string {
	what := fmt.Sprintf("exit %d", t.ExitCode)
	switch {
	case t.Signal != "":
		what = "signal " + t.Signal
	case t.Reason == string(state.ScriptDownloadFailed):
		what = "download failed"
	}
	return fmt.Sprintf("the instance was marked failed at %s by %s/%s (%s)", t.At.Local().Format(TimeFormat), t.Stage, t.Script, what)
}

// NeverRuns says why script s of stage can no longer run on this instance although it never
// ran to its end on it, or "" when it still can (or already did). bootID is the boot shown.
// The instance marked failed by a TERMINATE runs nothing more (without --force); a
// FIRST_BOOT_ONLY script that did not run on the first boot, once that boot's run of its stage
// ended, never runs (it is not owed: decide.Run).
func NeverRuns(st *state.State, bootID, stage string, s lifecycle.Script) string {
	if st == nil {
		return ""
	}
	if st.Terminated != nil {
		return TerminatedText(st.Terminated)
	}
	h := st.Scripts[state.Key(stage, s.Name)]
	if s.ExecutionPolicy == lifecycle.EveryBoot || (h != nil && h.Ended) {
		return ""
	}
	// Would a later boot run it? (A boot ID no boot has: a reboot with nothing recorded.)
	if DecideIn(st, "\x00later-boot", stage, s, false).Run {
		return ""
	}
	if bootID == st.FirstBootID {
		return "FIRST_BOOT_ONLY, and it did not run on this boot, the instance's first"
	}
	why := "FIRST_BOOT_ONLY, and it did not run on the first boot (" + st.FirstBootID + ")"
	if r := st.FirstBootStage(stage).Script(s.Name); r != nil {
		why = "FIRST_BOOT_ONLY, and on the first boot (" + st.FirstBootID + ") it was " + string(r.Status)
		if r.Reason != "" && r.Status != state.ScriptFailed {
			why += ": " + r.Reason
		}
		if r.Error != "" {
			why += ": " + r.Error
		}
	}
	return why
}

// SimulateFirstBootDone returns a copy of st in which every stage of the first boot ended and
// every script it would run ran, for planning the boot after a first boot that has not
// happened yet.
// simulated reports whether st was made up (every copy then counts as cached).
func SimulateFirstBootDone(st *state.State, doc *lifecycle.Document, instanceID, bootID string) (sim *state.State, simulated bool) {
	if st != nil && st.InstanceID == instanceID {
		return st, false
	}
	sim = state.New(instanceID, bootID, timeZero)
	b := sim.EnsureBoot(bootID, timeZero)
	for _, stage := range lifecycle.Stages {
		b.Stages[stage] = &state.StageRun{Status: state.StageSucceeded}
		for _, s := range doc.Scripts(stage) {
			h := sim.History(stage, s.Name)
			h.Ended, h.Runs, h.Digest = true, 1, "simulated"
		}
	}
	return sim, true
}
