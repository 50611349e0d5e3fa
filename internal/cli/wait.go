package cli

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/exitcode"
)

func newWaitCmd(o *Options) *cobra.Command {
	var st string
	var timeout, interval time.Duration
	cmd := &cobra.Command{
		Use:   "wait --stage S [--timeout D]",
		Short: "Block until stage S finished on this boot (for a Slurm prolog)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkStage(st); err != nil {
				return err
			}
			deadline := time.Now().Add(timeout)
			for {
				v, err := openView(o, false)
				if err != nil {
					return err
				}
				if done, err := v.StageEnded(st); done {
					return err
				}
				if timeout > 0 && time.Now().After(deadline) {
					return exitcode.Errorf(exitcode.Internal, "timed out after %s waiting for %s on boot %s", timeout, st, v.BootID)
				}
				select {
				case <-cmd.Context().Done():
					return exitcode.Errorf(exitcode.Interrupted(cmd.Context()), "interrupted")
				case <-time.After(interval):
				}
			}
		},
	}
	cmd.Flags().StringVar(&st, "stage", "", "nodeBootstrapped or nodeReady")
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "give up after this long (exit 1); 0 waits forever")
	cmd.Flags().DurationVar(&interval, "interval", 500*time.Millisecond, "how often to look at the state")
	_ = cmd.MarkFlagRequired("stage")
	return cmd
}
