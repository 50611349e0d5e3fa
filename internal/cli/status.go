package cli

import (
	"encoding/json"

	"github.com/spf13/cobra"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/exitcode"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/nodestatus"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/state"
)

func newStatusCmd(o *Options) *cobra.Command {
	var asJSON, wide bool
	var views statusViews
	cmd := &cobra.Command{
		Use:   "status [--json]",
		Short: "The node on this boot: each stage and script, its state and why, its last run (exit code: the verdict)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if other, err := views.wanted(&asJSON); err != nil || other {
				if err != nil {
					return err
				}
				return views.run(cmd, o, asJSON)
			}
			v, err := openView(o, false)
			if err != nil {
				return err
			}
			v.CachedDoc()
			running, holder := state.Held(v.Layout.LockFile())
			doc := nodestatus.Build(nodestatus.Input{State: v.State, Doc: v.Doc, BootID: v.BootID, InstanceID: v.InstanceID,
				NodeID: v.NodeID, Running: running, Holder: holder})
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				if err := enc.Encode(doc); err != nil {
					return err
				}
			} else {
				if err := nodestatus.WriteStatus(cmd.OutOrStdout(), doc, nodestatus.TextOptions{Wide: wide}); err != nil {
					return err
				}
			}
			if doc.ExitCode != exitcode.OK {
				return exitcode.Exit(doc.ExitCode)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the status document as JSON (pkg/status)")
	cmd.Flags().BoolVar(&wide, "wide", false, "one line per script, reasons at its end (default: fit 100 columns)")
	views.register(cmd)
	return cmd
}
