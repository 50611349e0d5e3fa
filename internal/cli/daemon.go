package cli

import (
	"github.com/spf13/cobra"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/exitcode"
)

func newDaemonCmd(o *Options) *cobra.Command {
	return &cobra.Command{
		Use:   "daemon",
		Short: "Run the whole boot under systemd (not yet implemented)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return exitf(exitcode.Usage, "daemon is not implemented yet")
		},
	}
}
