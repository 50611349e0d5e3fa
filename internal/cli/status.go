package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/exitcode"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/state"
	"github.com/pcs-lifecycle/pcs-lifecycle/pkg/lifecycle"
	"github.com/pcs-lifecycle/pcs-lifecycle/pkg/status"
)

func newStatusCmd(o *Options) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status [--json]",
		Short: "Per stage and script: policy, last result, exit code, start, duration, runs",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v, err := openView(o, false)
			if err != nil {
				return err
			}
			v.cachedDoc()
			doc := buildStatus(v)
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				if err := enc.Encode(doc); err != nil {
					return err
				}
			} else {
				printStatus(cmd.OutOrStdout(), doc)
			}
			if doc.ExitCode != exitcode.OK {
				return &ExitError{Code: doc.ExitCode}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the status document as JSON (pkg/status)")
	return cmd
}

// stageCode is a stage's contribution to status's exit code.
func stageCode(sr *state.StageRun, running bool) int {
	switch sr.Status {
	case state.StageRunning, state.StageInterrupted:
		return exitcode.Failed
	case state.StageRefused:
		return exitcode.Terminate
	}
	return sr.ExitCode
}

func buildStatus(v *view) *status.Document {
	d := &status.Document{Version: status.Version, Node: status.Node{BootID: v.bootID, InstanceID: v.inst, NodeID: v.nodeID}, Stages: []status.Stage{}}
	d.Running, d.Holder = state.Held(v.layout.LockFile())
	st := v.st
	if v.doc != nil {
		d.Node.Caching = string(v.doc.ScriptCachingPolicy)
	}
	if st != nil && st.InstanceID != v.inst {
		st = nil // another instance's history: nothing has run on this one
	}
	var boot *state.Boot
	if st != nil {
		d.Node.FirstBootID, d.Node.FirstBoot, d.Node.Boots = st.FirstBootID, st.FirstBootID == v.bootID, len(st.Boots)
		boot = st.Boot(v.bootID)
		if t := st.Terminated; t != nil {
			d.Terminated = &status.Termination{Stage: t.Stage, Script: t.Script, ExitCode: t.ExitCode, BootID: t.BootID, At: t.At}
			d.ExitCode = exitcode.Terminate
		}
	} else {
		d.Node.FirstBoot = true
	}
	for _, name := range lifecycle.Stages {
		var sr *state.StageRun
		if boot != nil {
			sr = boot.Stages[name]
		}
		var scripts []lifecycle.Script
		if v.doc != nil {
			scripts = v.doc.Scripts(name)
		} else if sr != nil {
			for _, r := range sr.Scripts {
				scripts = append(scripts, lifecycle.Script{Name: r.Name})
			}
		}
		if scripts == nil && sr == nil {
			continue
		}
		ss := status.Stage{Name: name, Status: "not_started", Scripts: []status.Script{}}
		if sr != nil {
			ss.Status = string(sr.Status)
			if sr.Status == state.StageRunning && !d.Running {
				ss.Status = string(state.StageInterrupted)
			}
			code := stageCode(sr, d.Running)
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
		}
		for _, s := range scripts {
			sc := status.Script{Name: s.Name, Location: s.ScriptSource.ScriptLocation,
				ExecutionPolicy: string(s.ExecutionPolicy), OnError: string(s.OnError), ThisBoot: "pending"}
			if r := sr.Script(s.Name); r != nil {
				sc.ThisBoot, sc.Reason = string(r.Status), r.Reason
				if r.Status == state.ScriptRunning && !d.Running {
					sc.ThisBoot = string(state.ScriptInterrupted)
				}
			}
			if st != nil {
				if h := st.Scripts[state.Key(name, s.Name)]; h != nil {
					sc.Runs, sc.SHA256 = h.Runs, h.Digest
					if l := h.Last; l != nil {
						sc.LastResult, sc.ExitCode, sc.Signal, sc.StartedAt, sc.Error = string(l.Status), l.ExitCode, l.Signal, l.StartedAt, l.Error
						if l.Status != state.ScriptRunning {
							ms := l.DurationMS
							sc.DurationMS = &ms
						}
					}
				}
			}
			ss.Scripts = append(ss.Scripts, sc)
		}
		d.Stages = append(d.Stages, ss)
	}
	return d
}

func fmtTime(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func printStatus(out io.Writer, d *status.Document) {
	kind := "reboot"
	if d.Node.FirstBoot {
		kind = "first boot"
	}
	fmt.Fprintf(out, "instance %s  boot %s (%s)  caching %s\n", d.Node.InstanceID, d.Node.BootID, kind, d.Node.Caching)
	if d.Running {
		fmt.Fprintf(out, "running now: %s\n", d.Holder)
	}
	if t := d.Terminated; t != nil {
		fmt.Fprintf(out, "TERMINATED by %s/%s exit=%d at %s: nothing more runs on this instance\n", t.Stage, t.Script, t.ExitCode, t.At.Format(time.RFC3339))
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	for _, s := range d.Stages {
		code := "-"
		if s.ExitCode != nil {
			code = fmt.Sprint(*s.ExitCode)
		}
		fmt.Fprintf(w, "%s\t%s\texit %s\tstarted %s\t\t\t\n", s.Name, s.Status, code, fmtTime(s.StartedAt))
		for _, sc := range s.Scripts {
			last := "never ran"
			if sc.LastResult != "" {
				last = sc.LastResult
				if sc.ExitCode != nil {
					last += fmt.Sprintf(" exit=%d", *sc.ExitCode)
				}
				if sc.Signal != "" {
					last += " signal:" + sc.Signal
				}
				if sc.DurationMS != nil {
					last += fmt.Sprintf(" %dms", *sc.DurationMS)
				}
				last += " at " + fmtTime(sc.StartedAt)
			}
			this := sc.ThisBoot
			if sc.Reason != "" && sc.ThisBoot != "succeeded" {
				this += " (" + sc.Reason + ")"
			}
			fmt.Fprintf(w, "  %s\t%s\t%s\tthis boot: %s\tlast: %s\truns %d\n", sc.Name, sc.ExecutionPolicy, sc.OnError, this, last, sc.Runs)
		}
	}
	w.Flush()
	fmt.Fprintf(out, "exit %d\n", d.ExitCode)
}
