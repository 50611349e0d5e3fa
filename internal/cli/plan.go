package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/nodestatus"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/stage"
)

func newPlanCmd(o *Options) *cobra.Command {
	var reboot, force, wide bool
	cmd := &cobra.Command{
		Use:   "plan [--reboot]",
		Short: "Show what a run would do with each script, running nothing",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v, err := openView(o, true)
			if err != nil {
				return err
			}
			if v.ConfigNote != "" {
				fmt.Fprintln(cmd.ErrOrStderr(), v.ConfigNote)
			}
			st, boot, hasCopy := v.State, v.BootID, v.Cache.HasScript
			if reboot {
				var simulated bool
				st, simulated = stage.SimulateFirstBootDone(st, v.Doc, v.InstanceID, "planned-first-boot")
				if simulated {
					hasCopy = func(string) bool { return true }
				}
				boot = "planned-next-boot"
			}
			return writePlan(cmd, stage.Plan(st, hasCopy, v.Doc, v.InstanceID, boot, force), wide)
		},
	}
	cmd.Flags().BoolVar(&reboot, "reboot", false, "plan the next boot instead of this one")
	cmd.Flags().BoolVar(&force, "force", false, "plan a run with --force")
	cmd.Flags().BoolVar(&wide, "wide", false, "one line per script, however long (default: fit 100 columns)")
	return cmd
}

// writePlan prints one row per script: run or skip (SPEC's plan verdict), its state on the
// planned boot (pkg/status words: pending is the one that runs), stage/name, policy, and why
// (with the download decision).
func writePlan(cmd *cobra.Command, items []stage.PlanItem, wide bool) error {
	t := &nodestatus.Table{Width: nodestatus.DefaultWidth, Wide: wide}
	if wide {
		t.Row("PLAN", "STATE", "SCRIPT", "POLICY", "CACHE", "WHY")
	} else {
		t.Row("PLAN", "STATE", "SCRIPT", "POLICY", "WHY")
	}
	for _, it := range items {
		why := it.Reason
		if it.NeverRuns != "" {
			why += "; never runs on this instance: " + it.NeverRuns
		}
		cache := ""
		if it.Run {
			cache = "cache: " + it.Fetch
			if it.Download {
				cache = "download: " + it.Fetch
			}
		}
		name := it.Stage + "/" + it.Script.Name
		verdict := "skip"
		if it.Run {
			verdict = "run"
		}
		switch {
		case wide:
			if cache == "" {
				cache = "-"
			}
			t.Row(verdict, it.State, name, string(it.Script.ExecutionPolicy), cache, why)
		case cache != "":
			t.Row(verdict, it.State, name, string(it.Script.ExecutionPolicy), why+"; "+cache)
		default:
			t.Row(verdict, it.State, name, string(it.Script.ExecutionPolicy), why)
		}
	}
	return t.Write(cmd.OutOrStdout())
}
