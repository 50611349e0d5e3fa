package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/boot"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/exitcode"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/notify"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/progress"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/slurm"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/stage"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/state"
	"github.com/pcs-lifecycle/pcs-lifecycle/pkg/lifecycle"
)

// bootFlags are the flags of the commands that run the boot sequence (run, daemon).
type bootFlags struct {
	force         bool
	scriptTimeout time.Duration
	stageTimeout  time.Duration

	scontrol            string
	registrationTimeout time.Duration
	pollInterval        time.Duration
	noConfigGrace       time.Duration
	holdJobs            bool
	drainOnFailure      bool
	onTerminate         string
	console             string

	after afterFlags // metrics textfile and evidence bundles
}

func (f *bootFlags) register(cmd *cobra.Command, noConfigGrace time.Duration) {
	fs := cmd.Flags()
	fs.BoolVar(&f.force, "force", false, "run even what already ran this boot, or on an instance a TERMINATE marked failed")
	fs.DurationVar(&f.scriptTimeout, "script-timeout", 0, "kill a script running longer (0: no limit)")
	fs.DurationVar(&f.stageTimeout, "stage-timeout", 0, "kill the stage's running script and skip the rest after this long (default 30m for nodeBootstrapped, none for nodeReady; under daemon it sets nodeBootstrapped's)")
	fs.StringVar(&f.scontrol, "scontrol", slurm.DefaultScontrol, "scontrol to run (a path, or a name looked up in PATH)")
	fs.DurationVar(&f.registrationTimeout, "registration-timeout", 30*time.Minute, "how long nodeReady waits for the node's Slurm registration (0: never wait)")
	fs.DurationVar(&f.pollInterval, "registration-poll", slurm.DefaultPollInterval, "steady interval of the registration checks, after the fast ones right after slurmd starts (PCS_LIFECYCLE_REGISTRATION_POLL)")
	fs.DurationVar(&f.noConfigGrace, "no-config-grace", noConfigGrace, "how long scontrol may find no configuration before Slurm counts as not configured (a configless slurmd fetching it)")
	fs.BoolVar(&f.holdJobs, "hold-jobs-until-ready", false, "drain the node while nodeReady runs; resume it after (only our own drain)")
	fs.BoolVar(&f.drainOnFailure, "drain-on-failure", false, "leave the node drained, reason naming the script, when a script failed")
	fs.StringVar(&f.onTerminate, "on-terminate", "exit", "after a TERMINATE: exit (code 4), poweroff, or command:<shell command>")
	fs.StringVar(&f.console, "console", "", "where the TERMINATE summary is written besides the journal (default /dev/console under --root)")
	f.after.register(cmd)
}

func (f *bootFlags) check(o *Options) error {
	if err := f.after.check(o); err != nil {
		return err
	}
	if err := boot.CheckOnTerminate(f.onTerminate); err != nil {
		return exitcode.Wrap(exitcode.Usage, err)
	}
	if f.registrationTimeout < 0 || f.pollInterval <= 0 {
		return exitcode.Errorf(exitcode.Usage, "--registration-timeout cannot be negative and --registration-poll must be positive")
	}
	if f.scriptTimeout < 0 || f.stageTimeout < 0 {
		return exitcode.Errorf(exitcode.Usage, "timeouts cannot be negative")
	}
	return nil
}

// config is the boot's configuration from the flags.
func (f *bootFlags) config() boot.Config {
	return boot.Config{
		RegistrationTimeout: f.registrationTimeout, RegistrationPoll: f.pollInterval,
		HoldJobs: f.holdJobs, DrainOnFailure: f.drainOnFailure,
		OnTerminate: f.onTerminate, Console: f.console,
	}
}

func (f *bootFlags) slurm() *slurm.Client {
	grace := f.noConfigGrace
	if grace == 0 {
		grace = -1 // none
	}
	return slurm.New(slurm.Options{Scontrol: f.scontrol, NoConfigGrace: grace})
}

// runner sets the timeouts. --stage-timeout is the limit of the stage run (run --stage S), and
// under daemon the limit of nodeBootstrapped only: nodeReady has none by default (SPEC §4).
func (f *bootFlags) runner(cmd *cobra.Command, s *boot.Session, stageName string) *stage.Runner {
	r := s.Runner(f.force)
	r.ScriptTimeout = f.scriptTimeout
	var given *time.Duration
	if cmd.Flags().Changed("stage-timeout") {
		given = &f.stageTimeout
	}
	r.StageTimeout = boot.StageTimeouts(stageName, given)
	return r
}

// runBoot opens the session, settles the configuration and runs fn on the boot sequence.
func runBoot(cmd *cobra.Command, o *Options, f *bootFlags, holder, stageName string, c boot.Config, n notify.Notifier,
	fn func(context.Context, *boot.Boot) error) (err error) {
	if err := f.check(o); err != nil {
		return err
	}
	ctx := cmd.Context()
	s, err := openSession(ctx, cmd, o, holder)
	if err != nil {
		return err
	}
	defer func() { err = closeSession(s, err) }()
	if err := s.LoadConfig(ctx); err != nil {
		return err
	}
	b := s.Boot(c, f.runner(cmd, s, stageName), f.slurm(), n, cmd.ErrOrStderr())
	b.Observers = append(b.Observers, &outcomePrinter{w: cmd.ErrOrStderr(), s: s, start: time.Now()}, f.after.observer(s))
	b.Wait = &progress.Wait{Out: cmd.ErrOrStderr(), Log: s.Log}
	return fn(ctx, b)
}

func newRunCmd(o *Options) *cobra.Command {
	var st string
	var f bootFlags
	cmd := &cobra.Command{
		Use:   "run --stage nodeBootstrapped|nodeReady",
		Short: "Run one stage's scripts, as the node's bootstrap calls it",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkStage(st); err != nil {
				return err
			}
			return runBoot(cmd, o, &f, "run --stage "+st, st, f.config(), notify.Nop{},
				func(ctx context.Context, b *boot.Boot) error { return b.Stage(ctx, st) })
		},
	}
	cmd.Flags().StringVar(&st, "stage", "", "nodeBootstrapped or nodeReady")
	_ = cmd.MarkFlagRequired("stage")
	f.register(cmd, 0)
	return cmd
}

func newDaemonCmd(o *Options) *cobra.Command {
	var f bootFlags
	var extend time.Duration
	cmd := &cobra.Command{
		Use:   "daemon",
		Short: "The whole boot under systemd: download, nodeBootstrapped, READY=1, Slurm registration, nodeReady",
		Long: `daemon is pcs-lifecycle.service's ExecStart (Type=notify). It downloads every script,
runs nodeBootstrapped while extending systemd's start timeout, sends READY=1 (slurmd, ordered
after it, starts then), waits for the node's registration with the Slurm controller, runs
nodeReady and exits with the worst stage result (never STOPPING=1: systemd would then not
apply RemainAfterExit=). After a TERMINATE it does not send READY=1, so a slurmd that requires
it never starts.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c := f.config()
			c.ExtendTimeout = extend
			return runBoot(cmd, o, &f, "daemon", lifecycle.StageNodeBootstrapped, c, notify.New(),
				func(ctx context.Context, b *boot.Boot) error { return b.Daemon(ctx) })
		},
	}
	f.register(cmd, 10*time.Second)
	cmd.Flags().DurationVar(&extend, "extend-timeout", 90*time.Second, "EXTEND_TIMEOUT_USEC sent (every third of it) while nodeBootstrapped runs")
	return cmd
}

func checkStage(s string) error {
	for _, n := range lifecycle.Stages {
		if s == n {
			return nil
		}
	}
	return exitcode.Errorf(exitcode.Usage, "--stage %q: must be nodeBootstrapped or nodeReady", s)
}

// outcomePrinter reports a stage's failures on stderr, then the stage's summary line.
type outcomePrinter struct {
	boot.NopObserver
	w     io.Writer
	s     *boot.Session
	start time.Time // of the stage being run (after the registration wait for nodeReady)
}

// Step: the next stage's time starts after READY=1 and after the registration wait.
func (p *outcomePrinter) Step(_ context.Context, st boot.Step) {
	if st.Kind == boot.StepReady || st.Kind == boot.StepRegistration {
		p.start = time.Now()
	}
}

func (p *outcomePrinter) StageEnded(_ context.Context, e boot.StageEnd) {
	out := e.Outcome
	took := time.Since(p.start)
	p.start = time.Now()
	if e.Err != nil {
		return // the error itself is printed as the command's message
	}
	if !out.AlreadyRan {
		for _, f := range out.Failures {
			fmt.Fprintf(p.w, "pcs-lifecycle: %s/%s failed (%s) onError=%s\n", f.Stage, f.Script, failureWhat(f), f.OnError)
		}
	}
	stageSummary(p.w, p.s, out, took)
}

func failureWhat(f stage.Failure) string {
	what := fmt.Sprintf("exit=%d", f.ExitCode)
	switch {
	case f.Status == state.ScriptDownloadFailed:
		return "not run: " + f.Err
	case f.Signal != "":
		what = "signal:" + f.Signal
	}
	if f.Err != "" {
		what += ": " + f.Err
	}
	return what
}
