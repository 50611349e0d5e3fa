package cli

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/exitcode"
	"github.com/pcs-lifecycle/pcs-lifecycle/pkg/lifecycle"
)

func newValidateCmd() *cobra.Command {
	var strict bool
	cmd := &cobra.Command{
		Use:   "validate FILE",
		Short: "Check a configuration document: every error with its JSON path, and warnings",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := os.ReadFile(args[0])
			if err != nil {
				return exitf(exitcode.Usage, "%v", err)
			}
			doc, warnings, err := lifecycle.Parse(data, lifecycle.Options{APIStrict: strict})
			w := cmd.OutOrStdout()
			for _, p := range warnings {
				fmt.Fprintf(w, "warning: %s\n", p)
			}
			if err != nil {
				return usageProblems(args[0], err)
			}
			n := len(doc.Scripts(lifecycle.StageNodeBootstrapped)) + len(doc.Scripts(lifecycle.StageNodeReady))
			fmt.Fprintf(w, "%s: valid (%d scripts, %s)\n", args[0], n, doc.ScriptCachingPolicy)
			return nil
		},
	}
	cmd.Flags().BoolVar(&strict, "api-strict", false, "apply the service API's patterns exactly (https hosts must be DNS names)")
	return cmd
}
