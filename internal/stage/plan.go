package stage

import (
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/state"
	"github.com/pcs-lifecycle/pcs-lifecycle/pkg/lifecycle"
)

// PlanItem is what a run would do with one script.
type PlanItem struct {
	Stage    string
	Script   lifecycle.Script
	Run      bool
	Reason   string
	Download bool   // it would be downloaded first
	Fetch    string // why (not) downloaded
}

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
		var stageSkip string
		if st.Terminated != nil && !force {
			stageSkip = "the instance was terminated by " + st.Terminated.Stage + "/" + st.Terminated.Script
		} else if b := st.Boot(bootID); b != nil && !force {
			if sr := b.Stages[stage]; sr != nil && !sr.Status.Resumable() {
				stageSkip = "stage already ran this boot (" + string(sr.Status) + ")"
			}
		}
		for _, s := range doc.Scripts(stage) {
			it := PlanItem{Stage: stage, Script: s}
			if stageSkip != "" {
				it.Reason = stageSkip
			} else {
				d := DecideIn(st, bootID, stage, s, force)
				it.Run, it.Reason = d.Run, d.Reason
				if d.Run {
					fd := FetchDecision(st, hasCopy, bootID, doc.ScriptCachingPolicy, stage, s.Name)
					it.Download, it.Fetch = fd.Run, fd.Reason
				}
			}
			items = append(items, it)
		}
	}
	return items
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
