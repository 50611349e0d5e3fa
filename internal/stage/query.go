package stage

import (
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/state"
	"github.com/pcs-lifecycle/pcs-lifecycle/pkg/lifecycle"
)

// Settled reports whether RunStage(stage) would run nothing: the instance was marked failed by
// a TERMINATE, or the stage already ended this boot (and no --force). The boot sequence then
// skips what only matters before scripts run (the Slurm registration, the job hold).
func (r *Runner) Settled(stage string) bool {
	if r.Force {
		return false
	}
	st := r.Store.Current()
	if st.Terminated != nil {
		return true
	}
	b := st.Boot(r.Node.BootID)
	return b != nil && b.Stages[stage] != nil && !b.Stages[stage].Status.Resumable()
}

// HasScripts reports whether the configuration lists scripts for stage.
func (r *Runner) HasScripts(stage string) bool { return len(r.Doc.Scripts(stage)) > 0 }

// BootFailures are the failures recorded in this boot, both stages, in the order they ran.
func (r *Runner) BootFailures() []Failure {
	return BootFailures(r.Store.Current(), r.Doc, r.Node.BootID)
}

// BootFailures are the failed scripts of bootID in st, both stages, in the order they ran;
// OnError comes from doc.
func BootFailures(st *state.State, doc *lifecycle.Document, bootID string) []Failure {
	b := st.Boot(bootID)
	if b == nil {
		return nil
	}
	var out []Failure
	for _, name := range lifecycle.Stages {
		sr := b.Stages[name]
		if sr == nil {
			continue
		}
		for _, r := range sr.Scripts {
			if r.Status != state.ScriptFailed && r.Status != state.ScriptDownloadFailed {
				continue
			}
			f := Failure{Stage: name, Script: r.Name, Status: r.Status, Signal: r.Signal, Err: r.Error}
			if r.ExitCode != nil {
				f.ExitCode = *r.ExitCode
			}
			for _, s := range doc.Scripts(name) {
				if s.Name == r.Name {
					f.OnError = s.OnError
				}
			}
			out = append(out, f)
		}
	}
	return out
}
