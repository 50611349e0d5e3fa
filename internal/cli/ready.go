package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/exitcode"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/fsutil"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/proc"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/slurm"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/stage"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/state"
	"github.com/pcs-lifecycle/pcs-lifecycle/pkg/lifecycle"
)

// slurmFlags are the flags of commands that run nodeReady (run, daemon).
type slurmFlags struct {
	scontrol            string
	registrationTimeout time.Duration
	pollInterval        time.Duration
	noConfigGrace       time.Duration
	holdJobs            bool
	drainOnFailure      bool
	onTerminate         string
	console             string
}

func (f *slurmFlags) register(cmd *cobra.Command, noConfigGrace time.Duration) {
	fs := cmd.Flags()
	fs.StringVar(&f.scontrol, "scontrol", "scontrol", "scontrol to run (a path, or a name looked up in PATH)")
	fs.DurationVar(&f.registrationTimeout, "registration-timeout", 30*time.Minute, "how long nodeReady waits for the node's Slurm registration (0: never wait)")
	fs.DurationVar(&f.pollInterval, "registration-poll", slurm.DefaultPollInterval, "how often the registration is polled")
	fs.DurationVar(&f.noConfigGrace, "no-config-grace", noConfigGrace, "how long scontrol may find no configuration before Slurm counts as not configured (a configless slurmd fetching it)")
	fs.BoolVar(&f.holdJobs, "hold-jobs-until-ready", false, "drain the node while nodeReady runs; resume it after (only our own drain)")
	fs.BoolVar(&f.drainOnFailure, "drain-on-failure", false, "leave the node drained, reason naming the script, when a script failed")
	fs.StringVar(&f.onTerminate, "on-terminate", "exit", "after a TERMINATE: exit (code 4), poweroff, or command:<shell command>")
	fs.StringVar(&f.console, "console", "", "where the TERMINATE summary is written besides the journal (default /dev/console under --root)")
}

func (f *slurmFlags) check() error {
	switch {
	case f.onTerminate == "exit", f.onTerminate == "poweroff":
	case strings.HasPrefix(f.onTerminate, "command:") && len(f.onTerminate) > len("command:"):
	default:
		return exitf(exitcode.Usage, "--on-terminate %q: must be exit, poweroff or command:<command>", f.onTerminate)
	}
	if f.registrationTimeout < 0 || f.pollInterval <= 0 {
		return exitf(exitcode.Usage, "--registration-timeout cannot be negative and --registration-poll must be positive")
	}
	return nil
}

func (f *slurmFlags) client() *slurm.Client {
	grace := f.noConfigGrace
	if grace == 0 {
		grace = -1 // none
	}
	return slurm.New(slurm.Options{Scontrol: f.scontrol, NoConfigGrace: grace})
}

// holdReason is the drain reason of --hold-jobs-until-ready.
const holdReason = "pcs-lifecycle: nodeReady running"

func failureText(f stage.Failure) string {
	what := fmt.Sprintf("exit=%d", f.ExitCode)
	switch {
	case f.Signal != "":
		what = "exit=signal:" + f.Signal
	case f.Status == state.ScriptDownloadFailed:
		what = "download failed"
	}
	return fmt.Sprintf("pcs-lifecycle: %s/%s %s", f.Stage, f.Script, what)
}

// boot failures recorded this boot (both stages), first first.
func bootFailures(st *state.State, doc *lifecycle.Document, bootID string) []stage.Failure {
	b := st.Boot(bootID)
	if b == nil {
		return nil
	}
	var out []stage.Failure
	for _, name := range lifecycle.Stages {
		sr := b.Stages[name]
		if sr == nil {
			continue
		}
		for _, r := range sr.Scripts {
			if r.Status != state.ScriptFailed && r.Status != state.ScriptDownloadFailed {
				continue
			}
			f := stage.Failure{Stage: name, Script: r.Name, Status: r.Status, Signal: r.Signal, Err: r.Error}
			if r.ExitCode != nil {
				f.ExitCode = *r.ExitCode
			}
			for _, s := range doc.Scripts(name) {
				if s.Name == r.Name {
					f.OnError = s.OnError
				}
			}
			out = append(out, f)
		}
	}
	return out
}

// runReady waits for the node's registration, then runs nodeReady with the Slurm extras:
// the job hold, the failure comment and drain. It returns the stage outcome; an executor
// failure (registration timeout) is an *ExitError.
func (s *session) runReady(ctx context.Context, r *stage.Runner, f *slurmFlags, status func(string)) (stage.Outcome, error) {
	log := s.log.With(zap.String("stage", lifecycle.StageNodeReady))
	sc := f.client()
	node := s.node.NodeID
	slurmOK := true
	// An instance a TERMINATE marked failed runs nothing (exit 4), and a stage already finished
	// this boot will not run again: neither needs the registration.
	if !r.Force && s.store.State.Terminated != nil {
		return r.RunStage(ctx, lifecycle.StageNodeReady)
	}
	if b := s.store.State.Boot(s.node.BootID); !r.Force && b != nil && b.Stages[lifecycle.StageNodeReady] != nil &&
		!b.Stages[lifecycle.StageNodeReady].Status.Resumable() {
		return r.RunStage(ctx, lifecycle.StageNodeReady)
	}
	// Slurm is needed for the nodeReady scripts, the job hold, and to show an earlier failure
	// of this boot (the Comment, --drain-on-failure) once the node is registered.
	if len(s.doc.Scripts(lifecycle.StageNodeReady)) > 0 || f.holdJobs || len(bootFailures(s.store.State, s.doc, s.node.BootID)) > 0 {
		if f.registrationTimeout == 0 {
			log.Info("not waiting for Slurm registration (--registration-timeout 0)")
			if _, err := sc.NodeState(ctx, node); err != nil {
				slurmOK = false // no Comment or hold on a node whose Slurm does not answer
			}
		} else {
			status("waiting for Slurm registration of " + node)
			t0 := time.Now()
			log.Info("waiting for the node's Slurm registration", zap.String("node", node), zap.Duration("timeout", f.registrationTimeout))
			last := ""
			err := sc.WaitRegistered(ctx, node, f.pollInterval, f.registrationTimeout, func(st slurm.State, err error) {
				msg := st.String()
				if err != nil {
					msg = err.Error()
				}
				if msg != last {
					log.Debug("registration poll", zap.String("node", node), zap.String("slurm", msg))
					last = msg
				}
			})
			switch {
			case err == nil:
				log.Info("node registered with Slurm", zap.String("node", node), zap.Int64("duration_ms", time.Since(t0).Milliseconds()))
			case errors.Is(err, slurm.ErrNotConfigured):
				slurmOK = false
				log.Warn("Slurm is not configured on this node; running nodeReady at once", zap.String("error", err.Error()))
			case errors.Is(err, slurm.ErrRegistrationTimeout):
				log.Error("node did not register with Slurm in time; no nodeReady script runs", zap.String("node", node),
					zap.Duration("timeout", f.registrationTimeout), zap.String("error", err.Error()))
				if rerr := r.RecordRegistrationTimeout(lifecycle.StageNodeReady, err.Error()); rerr != nil {
					return stage.Outcome{}, exitf(exitcode.Internal, "%v", rerr)
				}
				return stage.Outcome{}, exitf(exitcode.Internal, "node %s did not register with Slurm within %s (--registration-timeout); nodeReady did not run", node, f.registrationTimeout)
			case ctx.Err() != nil:
				return stage.Outcome{Stage: lifecycle.StageNodeReady, Interrupted: true}, nil
			default:
				log.Error("cannot read the node's Slurm state", zap.Error(err))
				return stage.Outcome{}, exitf(exitcode.Internal, "slurm: %v", err)
			}
		}
	} else {
		slurmOK = false
	}
	held := false
	if f.holdJobs && slurmOK {
		if err := sc.Drain(ctx, node, holdReason); err != nil {
			log.Warn("could not drain the node to hold jobs", zap.Error(err))
		} else {
			held = true
			log.Info("node drained while nodeReady runs", zap.String("reason", holdReason))
		}
	}
	out, err := r.RunStage(ctx, lifecycle.StageNodeReady)
	if err != nil || out.Interrupted {
		return out, err
	}
	if !slurmOK {
		return out, nil
	}
	fails := bootFailures(s.store.State, s.doc, s.node.BootID)
	if len(fails) > 0 {
		comment := failureText(fails[0])
		if len(fails) > 1 {
			comment += fmt.Sprintf(" (+%d more)", len(fails)-1)
		}
		if err := sc.SetComment(ctx, node, comment); err != nil {
			log.Warn("could not set the node's Slurm comment", zap.Error(err))
		} else {
			log.Info("node comment set", zap.String("comment", comment))
		}
	}
	if f.drainOnFailure && len(fails) > 0 {
		reason := failureText(fails[0])
		drain := func() error { return sc.Drain(ctx, node, reason) }
		if held {
			// Swap our hold's reason for the failure's: no window in which a job could start.
			drain = func() error { return sc.ReplaceDrain(ctx, node, holdReason, reason) }
		}
		if err := drain(); err != nil {
			log.Warn("could not drain the node after a failure", zap.Error(err))
		} else {
			log.Warn("node left drained after a failure", zap.String("reason", reason))
		}
		return out, nil
	}
	if held {
		if err := sc.Resume(ctx, node, holdReason); err != nil {
			log.Warn("node not resumed", zap.Error(err))
		} else {
			log.Info("node resumed after nodeReady")
		}
	}
	return out, nil
}

// onTerminate writes the TERMINATE summary to the journal (stderr) and the console, then acts.
func (s *session) onTerminate(ctx context.Context, f *slurmFlags, out stage.Outcome) {
	var fail *stage.Failure
	for i := range out.Failures {
		if out.Failures[i].OnError == lifecycle.Terminate {
			fail = &out.Failures[i]
		}
	}
	if fail == nil {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "pcs-lifecycle: TERMINATE: %s\n", failureText(*fail))
	if fail.Err != "" {
		fmt.Fprintf(&b, "pcs-lifecycle: %s\n", fail.Err)
	}
	for _, l := range lastLines(s.layout.ScriptLog(fail.Stage, fail.Script), 20) {
		fmt.Fprintf(&b, "pcs-lifecycle: | %s\n", l)
	}
	fmt.Fprintf(&b, "pcs-lifecycle: the node must be replaced (--on-terminate %s)\n", f.onTerminate)
	summary := b.String()
	fmt.Fprint(os.Stderr, summary)
	console := f.console
	if console == "" {
		console = s.layout.Console()
	}
	if c, err := os.OpenFile(console, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600); err == nil {
		_, _ = c.WriteString(summary)
		c.Close()
	} else {
		s.log.Warn("could not write the TERMINATE summary to the console", zap.String("console", console), zap.Error(err))
	}
	s.log.Error("TERMINATE summary written", zap.String("stage", fail.Stage), zap.String("script", fail.Script),
		zap.String("on_terminate", f.onTerminate), zap.String("console", console))
	var argv []string
	switch {
	case f.onTerminate == "poweroff":
		argv = []string{"systemctl", "poweroff"}
	case strings.HasPrefix(f.onTerminate, "command:"):
		argv = []string{stage.Shell, "-c", strings.TrimPrefix(f.onTerminate, "command:")}
	default:
		return
	}
	path := argv[0]
	if path == "systemctl" {
		path = "/usr/bin/systemctl"
		if _, err := os.Stat(path); err != nil {
			path = "/bin/systemctl"
		}
	}
	outb, res, err := proc.Output(context.WithoutCancel(ctx), proc.Spec{Path: path, Args: argv[1:], Env: stage.BaseEnv, Timeout: 2 * time.Minute})
	if err != nil || res.Failed() {
		s.log.Error("on-terminate action failed", zap.Strings("command", argv), zap.Int("exit_code", res.ExitCode),
			zap.String("output", strings.TrimSpace(string(outb))), zap.Any("error", err))
		return
	}
	s.log.Info("on-terminate action done", zap.Strings("command", argv))
}

func lastLines(path string, n int) []string {
	data, err := fsutil.ReadFile(path)
	if err != nil {
		return nil
	}
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return lines
}
