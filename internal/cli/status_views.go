package cli

import (
	"github.com/spf13/cobra"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/boot"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/exitcode"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/metrics"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/nodestatus"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/state"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/timeline"
	"github.com/pcs-lifecycle/pcs-lifecycle/pkg/status"
)

// viewStatus is the status document of a view (what status --json prints).
func viewStatus(v *boot.View) *status.Document {
	running, holder := state.Held(v.Layout.LockFile())
	return nodestatus.Build(nodestatus.Input{State: v.State, Doc: v.Doc, BootID: v.BootID, InstanceID: v.InstanceID,
		NodeID: v.NodeID, Running: running, Holder: holder})
}

// statusViews are status's other views of the same state: the metrics (--format prometheus)
// and the boot timeline (--timeline, --sort duration). Both are reports: they exit 0 when
// printed (the node's result is in them), where plain status exits with the boot's result.
type statusViews struct {
	format   string
	timeline bool
	sort     string
}

func (x *statusViews) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&x.format, "format", "", "text, json (same as --json) or prometheus (the metrics --metrics-textfile writes)")
	fs.BoolVar(&x.timeline, "timeline", false, "the boot's timeline: executor start, downloads, stages, scripts, READY=1, registration wait, with durations")
	fs.StringVar(&x.sort, "sort", "time", "timeline order: time, or duration (the slowest first, like systemd-analyze blame)")
}

// wanted reports whether status prints one of these views rather than the status itself; it
// settles --json and --format.
func (x *statusViews) wanted(asJSON *bool) (bool, error) {
	switch x.format {
	case "", "text":
	case "json":
		*asJSON = true
	case "prometheus":
		if x.timeline {
			return false, exitf(exitcode.Usage, "--format prometheus and --timeline cannot be combined")
		}
		if *asJSON {
			return false, exitf(exitcode.Usage, "--format prometheus and --json cannot be combined")
		}
		return true, nil
	default:
		return false, exitf(exitcode.Usage, "--format %q: must be text, json or prometheus", x.format)
	}
	if x.sort != "time" && x.sort != "duration" {
		return false, exitf(exitcode.Usage, "--sort %q: must be time or duration", x.sort)
	}
	if x.sort == "duration" && !x.timeline {
		return false, exitf(exitcode.Usage, "--sort applies to --timeline")
	}
	return x.timeline, nil
}

func (x *statusViews) run(cmd *cobra.Command, o *Options, asJSON bool) error {
	v, err := openView(o, false)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if x.format == "prometheus" {
		v.CachedDoc()
		return metrics.Write(out, metrics.Families(metrics.Input{Status: viewStatus(v), State: v.State}))
	}
	st := v.State
	if st != nil && st.InstanceID != v.InstanceID {
		st = nil
	}
	tl := timeline.Build(st, v.BootID)
	if tl == nil {
		return exitf(exitcode.NothingRan, "nothing recorded on boot %s of instance %s yet", v.BootID, v.InstanceID)
	}
	byDuration := x.sort == "duration"
	if asJSON {
		return timeline.WriteJSON(out, tl, byDuration)
	}
	return timeline.WriteText(out, tl, byDuration)
}
