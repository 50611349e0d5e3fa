package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/exitcode"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/stage"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/state"
	"github.com/pcs-lifecycle/pcs-lifecycle/pkg/lifecycle"
)

// runFlags are the flags of commands that execute scripts (run, daemon).
type runFlags struct {
	force         bool
	scriptTimeout time.Duration
	stageTimeout  time.Duration
}

func (f *runFlags) register(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&f.force, "force", false, "run even what already ran this boot, or on an instance a TERMINATE marked failed")
	cmd.Flags().DurationVar(&f.scriptTimeout, "script-timeout", 0, "kill a script running longer (0: no limit)")
	cmd.Flags().DurationVar(&f.stageTimeout, "stage-timeout", 0, "kill the stage's running script and skip the rest after this long (default 30m for nodeBootstrapped, none for nodeReady; under daemon it sets nodeBootstrapped's)")
}

// apply sets the timeouts. --stage-timeout is the limit of the stage run (run --stage S), and
// under daemon the limit of nodeBootstrapped only: nodeReady has none by default (SPEC §4).
func (f *runFlags) apply(cmd *cobra.Command, r *stage.Runner, stageName string) {
	r.ScriptTimeout = f.scriptTimeout
	r.StageTimeout = map[string]time.Duration{lifecycle.StageNodeBootstrapped: 30 * time.Minute}
	if cmd.Flags().Changed("stage-timeout") {
		r.StageTimeout[stageName] = f.stageTimeout
	}
}

func checkStage(s string) error {
	for _, n := range lifecycle.Stages {
		if s == n {
			return nil
		}
	}
	return exitf(exitcode.Usage, "--stage %q: must be nodeBootstrapped or nodeReady", s)
}

func newRunCmd(o *Options) *cobra.Command {
	var st string
	var rf runFlags
	var sf slurmFlags
	cmd := &cobra.Command{
		Use:   "run --stage nodeBootstrapped|nodeReady",
		Short: "Run one stage's scripts, as the node's bootstrap calls it",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkStage(st); err != nil {
				return err
			}
			if err := sf.check(); err != nil {
				return err
			}
			if rf.scriptTimeout < 0 || rf.stageTimeout < 0 {
				return exitf(exitcode.Usage, "timeouts cannot be negative")
			}
			ctx := cmd.Context()
			s, err := openSession(ctx, o, "run --stage "+st)
			if err != nil {
				return err
			}
			defer s.close()
			if err := s.loadConfig(ctx); err != nil {
				return err
			}
			r := s.runner(rf.force)
			rf.apply(cmd, r, st)
			var out stage.Outcome
			if st == lifecycle.StageNodeReady {
				out, err = s.runReady(ctx, r, &sf, func(string) {})
			} else {
				out, err = r.RunStage(ctx, st)
			}
			var ee *ExitError
			if errors.As(err, &ee) {
				return err
			}
			if err != nil {
				s.log.Error("executor failed", zap.String("stage", st), zap.Error(err))
				return exitf(exitcode.Internal, "%s: %v", st, err)
			}
			if out.Interrupted {
				return exitf(interruptCode(ctx), "%s interrupted (%s); state saved", st, causeOf(ctx))
			}
			printOutcome(cmd, out)
			if out.ExitCode == exitcode.Terminate && !out.AlreadyRan {
				s.onTerminate(ctx, &sf, out)
			}
			if out.ExitCode != exitcode.OK {
				return &ExitError{Code: out.ExitCode}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&st, "stage", "", "nodeBootstrapped or nodeReady")
	_ = cmd.MarkFlagRequired("stage")
	rf.register(cmd)
	sf.register(cmd, 0)
	return cmd
}

func printOutcome(cmd *cobra.Command, out stage.Outcome) {
	w := cmd.ErrOrStderr()
	switch {
	case out.AlreadyRan:
		fmt.Fprintf(w, "pcs-lifecycle: %s already ran this boot (%s, exit %d); use --force to run it again\n", out.Stage, out.Status, out.ExitCode)
	case out.ExitCode != exitcode.OK:
		for _, f := range out.Failures {
			what := fmt.Sprintf("exit=%d", f.ExitCode)
			switch {
			case f.Status == state.ScriptDownloadFailed:
				what = "not run: " + f.Err
			case f.Signal != "":
				what = "signal:" + f.Signal
			}
			if f.Err != "" && f.Status != state.ScriptDownloadFailed {
				what += ": " + f.Err
			}
			fmt.Fprintf(w, "pcs-lifecycle: %s/%s failed (%s) onError=%s\n", f.Stage, f.Script, what, f.OnError)
		}
		fmt.Fprintf(w, "pcs-lifecycle: exit %d for stage %s\n", out.ExitCode, out.Stage)
	}
}

func causeOf(ctx context.Context) string {
	if c := context.Cause(ctx); c != nil {
		return c.Error()
	}
	return "cancelled"
}
