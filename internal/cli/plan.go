package cli

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/stage"
)

func newPlanCmd(o *Options) *cobra.Command {
	var reboot, force bool
	cmd := &cobra.Command{
		Use:   "plan [--reboot]",
		Short: "Show what a run would do with each script, running nothing",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v, err := openView(o, true)
			if err != nil {
				return err
			}
			st, boot, hasCopy := v.st, v.bootID, v.cache.HasScript
			if reboot {
				var simulated bool
				st, simulated = stage.SimulateFirstBootDone(st, v.doc, v.inst, "planned-first-boot")
				if simulated {
					hasCopy = func(string) bool { return true }
				}
				boot = "planned-next-boot"
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			for _, it := range stage.Plan(st, hasCopy, v.doc, v.inst, boot, force) {
				verb := "skip"
				if it.Run {
					verb = "run"
				}
				dl := ""
				if it.Run {
					dl = "cache: " + it.Fetch
					if it.Download {
						dl = "download: " + it.Fetch
					}
				}
				fmt.Fprintf(w, "%s\t%s/%s\t%s\t%s\t%s\n", verb, it.Stage, it.Script.Name, it.Script.ExecutionPolicy, it.Reason, dl)
			}
			return w.Flush()
		},
	}
	cmd.Flags().BoolVar(&reboot, "reboot", false, "plan the next boot instead of this one")
	cmd.Flags().BoolVar(&force, "force", false, "plan a run with --force")
	return cmd
}
