package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

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
			var ve *lifecycle.ValidationError
			if errors.As(err, &ve) {
				// The listing is validate's output: on stdout, one "error: path: message" per
				// line; stderr repeats it unless both go to the same place (a terminal).
				for _, p := range ve.Problems {
					fmt.Fprintf(w, "error: %s\n", p)
				}
			}
			for _, p := range warnings {
				fmt.Fprintf(w, "warning: %s\n", p)
			}
			if err != nil {
				if sameFile(cmd.OutOrStdout(), cmd.ErrOrStderr()) {
					return exitf(exitcode.Usage, "%s: invalid configuration", args[0])
				}
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

// sameFile reports whether two writers are the same open file (say, one terminal).
func sameFile(a, b io.Writer) bool {
	fa, ok1 := a.(*os.File)
	fb, ok2 := b.(*os.File)
	if !ok1 || !ok2 {
		return false
	}
	var sa, sb syscall.Stat_t
	if syscall.Fstat(int(fa.Fd()), &sa) != nil || syscall.Fstat(int(fb.Fd()), &sb) != nil {
		return false
	}
	return sa.Dev == sb.Dev && sa.Ino == sb.Ino
}
