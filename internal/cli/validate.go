package cli

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/exitcode"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/source"
	"github.com/pcs-lifecycle/pcs-lifecycle/pkg/lifecycle"
)

func newValidateCmd(o *Options) *cobra.Command {
	var strict bool
	cmd := &cobra.Command{
		Use:   "validate FILE|s3://BUCKET/KEY|https://URL|-",
		Short: "Check a configuration document: the form found, every error with its JSON path, and warnings",
		Long: `Check a configuration document, from the same places --config reads it: a file, an
s3:// or https:// document, or - for standard input. It accepts the document given to
aws pcs create-compute-node-group --node-lifecycle-actions, the same wrapped as
{"nodeLifecycleActions": {...}}, and the output of aws pcs get-compute-node-group, and
says which it found.

The listing is the output, on stdout, each problem once: "error: PATH: MESSAGE" lines,
then "warning: PATH: MESSAGE" lines, then a verdict line.

Exit codes: 0 valid (warnings alone do not fail it), 2 invalid or unreadable.`,
		Example: `  pcs-lifecycle validate node-lifecycle-actions.json
  aws pcs get-compute-node-group --cluster-identifier my-cluster --compute-node-group-identifier compute-1 | pcs-lifecycle validate -
  pcs-lifecycle validate --api-strict s3://my-bucket/pcs/node-lifecycle-actions.json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.validateCommon(); err != nil {
				return err
			}
			loc, name := args[0], sourceName(args[0])
			f := source.New(source.Config{
				Attempts: o.DownloadAttempts, Backoff: o.DownloadBackoff, ExpectedBucketOwner: o.ExpectedBucketOwner,
				OnRetry: func(loc string, attempt int, err error, wait time.Duration) {
					fmt.Fprintf(cmd.ErrOrStderr(), "pcs-lifecycle: %s: attempt %d failed (%v); retrying in %s\n",
						loc, attempt, err, wait.Round(time.Millisecond))
				},
			})
			data, err := readConfigSource(cmd.Context(), f, loc, cmd.InOrStdin())
			if err != nil {
				return exitf(exitcode.Usage, "%s: %w", name, err)
			}
			return printValidation(cmd, name, data, lifecycle.Options{APIStrict: strict})
		},
	}
	cmd.Flags().BoolVar(&strict, "api-strict", false, "apply the service API's patterns exactly (https hosts must be DNS names)")
	return cmd
}

// printValidation writes validate's listing for data, read from name: the form found, the
// errors, the warnings and the verdict, each once, on stdout. Invalid is exit 2 with nothing
// more on stderr: the listing is the message.
func printValidation(cmd *cobra.Command, name string, data []byte, opts lifecycle.Options) error {
	w := cmd.OutOrStdout()
	d, err := lifecycle.Decode(data, opts)
	if d.Form != "" {
		fmt.Fprintf(w, "%s: read as %s\n", name, d.Form.Describe())
	}
	var ve *lifecycle.ValidationError
	if errors.As(err, &ve) {
		for _, p := range ve.Problems {
			fmt.Fprintf(w, "error: %s\n", p)
		}
	} else if err != nil {
		fmt.Fprintf(w, "error: %v\n", err)
	}
	for _, p := range d.Warnings {
		fmt.Fprintf(w, "warning: %s\n", p)
	}
	if err != nil {
		n := 1
		if ve != nil {
			n = len(ve.Problems)
		}
		fmt.Fprintf(w, "%s: invalid (%s%s)\n", name, plural(n, "error"), warningCount(len(d.Warnings)))
		return &ExitError{Code: exitcode.Usage}
	}
	doc := d.Document
	n := len(doc.Scripts(lifecycle.StageNodeBootstrapped)) + len(doc.Scripts(lifecycle.StageNodeReady))
	fmt.Fprintf(w, "%s: valid (%s, %s%s)\n", name, plural(n, "script"), doc.ScriptCachingPolicy, warningCount(len(d.Warnings)))
	return nil
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func warningCount(n int) string {
	if n == 0 {
		return ""
	}
	return ", " + plural(n, "warning")
}
