// Package nodestatus builds the status of a node (the pkg/status document) from its state and
// configuration, and prints it and plans for a terminal. The states it reports are the one
// vocabulary of pkg/status, shared by status, status --json, plan and the metrics
// (docs/states.md).
package nodestatus

import (
	"fmt"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/exitcode"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/stage"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/state"
	"github.com/pcs-lifecycle/pcs-lifecycle/pkg/lifecycle"
	"github.com/pcs-lifecycle/pcs-lifecycle/pkg/status"
)

// Input is what the status of a node is made of.
type Input struct {
	State      *state.State        // nil: nothing ever ran on this node
	Doc        *lifecycle.Document // the cached configuration; nil when there is none
	BootID     string
	InstanceID string
	NodeID     string
	Running    bool   // an executor holds the lock now
	Holder     string // which one
}

// stageCode is a stage's contribution to status's exit code.
func stageCode(sr *state.StageRun) int {
	switch sr.Status {
	case state.StageRunning, state.StageInterrupted:
		return exitcode.Failed
	case state.StageRefused:
		return exitcode.Terminate
	}
	return sr.ExitCode
}

// Build returns the status document of the node for the current boot.
func Build(in Input) *status.Document {
	d := &status.Document{Version: status.Version, Running: in.Running, Holder: in.Holder,
		Node: status.Node{BootID: in.BootID, InstanceID: in.InstanceID, NodeID: in.NodeID}, Stages: []status.Stage{}}
	st := in.State
	if in.Doc != nil {
		d.Node.Caching = string(in.Doc.ScriptCachingPolicy)
	}
	if st != nil && st.InstanceID != in.InstanceID {
		st = nil // another instance's history: nothing has run on this one
	}
	boot := buildNode(d, st, in.BootID)
	doc := in.Doc
	if !d.Node.ConfigCached {
		doc = nil // a configuration cached for another instance is not this one's
	}
	forecast := map[string]stage.PlanItem{}
	if doc != nil {
		for _, it := range stage.Plan(st, func(string) bool { return true }, doc, in.InstanceID, in.BootID, false) {
			forecast[state.Key(it.Stage, it.Script.Name)] = it
		}
	}
	ranThisBoot := false
	notStarted := []string{}
	for _, name := range lifecycle.Stages {
		var sr *state.StageRun
		if boot != nil {
			sr = boot.Stages[name]
		}
		var scripts []lifecycle.Script
		if doc != nil {
			scripts = doc.Scripts(name)
		} else if sr != nil {
			for _, r := range sr.Scripts {
				scripts = append(scripts, lifecycle.Script{Name: r.Name})
			}
		}
		if scripts == nil && sr == nil {
			continue
		}
		ss := buildStage(d, name, sr)
		switch {
		case sr != nil:
			ranThisBoot = true
		case d.Terminated == nil:
			notStarted = append(notStarted, name)
		}
		for _, s := range scripts {
			ss.Scripts = append(ss.Scripts, buildScript(st, in.BootID, sr, forecast, name, s, d.Running))
		}
		d.Stages = append(d.Stages, ss)
	}
	summarize(d, st, in.BootID, ranThisBoot, notStarted)
	return d
}

// buildNode fills what the state says of the node (first boot, boots, configuration, the
// evidence upload, a TERMINATE) and returns the current boot's record, if any.
func buildNode(d *status.Document, st *state.State, bootID string) *state.Boot {
	if st == nil {
		d.Node.FirstBoot = true
		return nil
	}
	d.Node.FirstBootID, d.Node.FirstBoot, d.Node.Boots = st.FirstBootID, st.FirstBootID == bootID, len(st.Boots)
	d.Node.ConfigCached = st.ConfigSHA != ""
	boot := st.Boot(bootID)
	if boot != nil && boot.Evidence != nil {
		e := boot.Evidence
		d.Evidence = &status.Evidence{At: e.At, Stage: e.Stage, OK: e.OK, URI: e.URI, Error: e.Error, DurationMS: e.DurationMS}
	}
	if t := st.Terminated; t != nil {
		d.Terminated = &status.Termination{Stage: t.Stage, Script: t.Script, ExitCode: t.ExitCode, BootID: t.BootID, At: t.At,
			Signal: t.Signal, Message: stage.TerminatedText(t)}
		d.ExitCode = exitcode.Terminate
	}
	return boot
}

// buildStage is one stage on this boot (its scripts apart): its run, refused on an instance a
// TERMINATE marked failed, or not started. Its result goes into the document's exit code.
func buildStage(d *status.Document, name string, sr *state.StageRun) status.Stage {
	ss := status.Stage{Name: name, Status: status.StageNotStarted, Scripts: []status.Script{}}
	switch {
	case sr != nil:
		ss.Status = string(sr.Status)
		if sr.Status == state.StageRunning && !d.Running {
			ss.Status = string(state.StageInterrupted)
		}
		code := stageCode(sr)
		d.ExitCode = exitcode.Worst(d.ExitCode, code)
		if sr.Status != state.StageRunning {
			ss.ExitCode = &code
		}
		t := sr.StartedAt
		ss.StartedAt = &t
		ss.EndedAt = sr.EndedAt
		if sr.EndedAt != nil {
			ms := sr.EndedAt.Sub(sr.StartedAt).Milliseconds()
			ss.DurationMS = &ms
		}
	case d.Terminated != nil:
		ss.Status = status.StageRefused
		code := exitcode.Terminate
		ss.ExitCode = &code
	}
	return ss
}

// summarize says the exit code in words (and sets 5 when nothing ran on this boot).
func summarize(d *status.Document, st *state.State, bootID string, ranThisBoot bool, notStarted []string) {
	switch {
	case d.Terminated != nil:
		d.Summary = stage.TerminatedText(st.Terminated) + ": nothing more runs on it; it must be replaced"
	case st == nil:
		d.ExitCode = exitcode.NothingRan
		d.Summary = "pcs-lifecycle never ran on this instance: no state and no configuration cached"
	case !d.Node.ConfigCached && !ranThisBoot:
		d.ExitCode = exitcode.NothingRan
		d.Summary = "no configuration cached: the first run on this instance did not get its --config"
	case !ranThisBoot:
		d.ExitCode = exitcode.NothingRan
		d.Summary = "nothing has run on this boot (" + bootID + ")"
		if last := lastBoot(st, bootID); last != nil {
			d.Summary += "; the last boot that ran was " + last.BootID + ", started " + last.StartedAt.Local().Format(stage.TimeFormat)
		}
	default:
		d.Summary = summary(d, notStarted)
	}
}

func lastBoot(st *state.State, bootID string) *state.Boot {
	for i := len(st.Boots) - 1; i >= 0; i-- {
		if b := st.Boots[i]; b.BootID != bootID && len(b.Stages) > 0 {
			return b
		}
	}
	return nil
}

func summary(d *status.Document, notStarted []string) string {
	var running, interrupted, failed []string
	for _, s := range d.Stages {
		switch s.Status {
		case status.StageRunning:
			running = append(running, s.Name)
		case status.StageInterrupted:
			interrupted = append(interrupted, s.Name)
		case status.StageNotRegistered:
			return s.Name + " did not run: the node did not register with Slurm in time"
		case status.StageFailed:
			failed = append(failed, s.Name)
		}
	}
	switch {
	case len(running) > 0:
		return join(running) + " running now"
	case len(interrupted) > 0:
		return join(interrupted) + " interrupted: running the stage again in this boot resumes it"
	case len(failed) > 0:
		return "a script failed in " + join(failed) + " (CONTINUE or STOP_SEQUENCE): the node carries on"
	case len(notStarted) > 0:
		return "no failure so far; " + join(notStarted) + " not started yet"
	}
	return "every script succeeded or was skipped"
}

func join(s []string) string {
	if len(s) == 2 {
		return s[0] + " and " + s[1]
	}
	return fmt.Sprint(s[0])
}

func buildScript(st *state.State, bootID string, sr *state.StageRun, forecast map[string]stage.PlanItem, stageName string, s lifecycle.Script, running bool) status.Script {
	sc := status.Script{Name: s.Name, Location: s.ScriptSource.ScriptLocation,
		ExecutionPolicy: string(s.ExecutionPolicy), OnError: string(s.OnError), ThisBoot: status.ScriptPending}
	if r := sr.Script(s.Name); r != nil {
		sc.ThisBoot, sc.Reason = string(r.Status), r.Reason
		if r.Status == state.ScriptRunning && !running {
			sc.ThisBoot = string(state.ScriptInterrupted)
		}
		sc.State = sc.ThisBoot
		switch r.Status {
		case state.ScriptSkipped, state.ScriptNotRun, state.ScriptDownloadFailed:
			sc.NeverRuns = stage.NeverRuns(st, bootID, stageName, s)
		}
	} else if it, ok := forecast[state.Key(stageName, s.Name)]; ok {
		sc.State, sc.Reason, sc.NeverRuns = it.State, it.Reason, it.NeverRuns
		if sr != nil && !sr.Status.Resumable() && sc.State == status.ScriptSkipped {
			sc.Reason = "not recorded in this boot's run of its stage"
		}
	} else {
		sc.State = status.ScriptPending
	}
	if st != nil {
		if h := st.Scripts[state.Key(stageName, s.Name)]; h != nil {
			sc.Runs, sc.SHA256 = h.Runs, h.Digest
			if l := h.Last; l != nil {
				sc.LastResult, sc.ExitCode, sc.Signal, sc.StartedAt, sc.Error = string(l.Status), l.ExitCode, l.Signal, l.StartedAt, l.Error
				if l.Status != state.ScriptRunning && l.Status != state.ScriptDownloadFailed {
					ms := l.DurationMS
					sc.DurationMS = &ms
				}
			}
		}
	}
	return sc
}
