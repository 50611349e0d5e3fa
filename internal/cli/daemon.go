package cli

import (
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/exitcode"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/notify"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/state"
	"github.com/pcs-lifecycle/pcs-lifecycle/pkg/lifecycle"
)

// notifyObserver reports the running script to systemd and keeps extending the start timeout
// while nodeBootstrapped runs (before READY=1 systemd's TimeoutStartSec applies).
type notifyObserver struct {
	n      notify.Notifier
	log    *zap.Logger
	extend time.Duration

	mu     sync.Mutex
	stop   chan struct{}
	stopWG sync.WaitGroup
}

func (o *notifyObserver) status(s string) {
	if err := o.n.Status(s); err != nil {
		o.log.Debug("sd_notify STATUS failed", zap.Error(err))
	}
}

func (o *notifyObserver) ScriptStarted(stageName, name string) { o.status(stageName + "/" + name) }

func (o *notifyObserver) ScriptEnded(stageName, name string, run *state.ScriptRun) {
	o.status(stageName + "/" + name + " " + string(run.Status))
}

// keepExtending sends EXTEND_TIMEOUT_USEC every extend/3 until Ready.
func (o *notifyObserver) keepExtending() {
	o.stop = make(chan struct{})
	o.stopWG.Add(1)
	go func() {
		defer o.stopWG.Done()
		t := time.NewTicker(o.extend / 3)
		defer t.Stop()
		_ = o.n.ExtendTimeout(o.extend)
		for {
			select {
			case <-o.stop:
				return
			case <-t.C:
				_ = o.n.ExtendTimeout(o.extend)
			}
		}
	}()
}

// stopExtending ends the EXTEND_TIMEOUT_USEC ticker (idempotent).
func (o *notifyObserver) stopExtending() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.stop != nil {
		close(o.stop)
		o.stopWG.Wait()
		o.stop = nil
	}
}

// Ready stops the extensions and sends READY=1.
func (o *notifyObserver) Ready() {
	o.stopExtending()
	if err := o.n.Ready(); err != nil {
		o.log.Warn("sd_notify READY=1 failed", zap.Error(err))
	}
}

func newDaemonCmd(o *Options) *cobra.Command {
	var rf runFlags
	var sf slurmFlags
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
			if err := sf.check(); err != nil {
				return err
			}
			ctx := cmd.Context()
			n := notify.New()
			s, err := openSession(ctx, o, "daemon")
			if err != nil {
				return err
			}
			defer s.close()
			obs := &notifyObserver{n: n, log: s.log, extend: extend}
			obs.keepExtending()
			// Until nodeBootstrapped has ended without TERMINATE, every way out leaves READY=1
			// unsent: the unit fails and slurmd, which requires it, does not start — as in
			// per-stage mode, where a failed bootstrapped oneshot keeps slurmd down.
			defer obs.stopExtending()
			if err := s.loadConfig(ctx); err != nil {
				return err
			}
			r := s.runner(rf.force)
			rf.apply(cmd, r, lifecycle.StageNodeBootstrapped)
			r.Observer = obs
			obs.status("downloading scripts")
			if err := r.Prefetch(ctx); err != nil {
				return exitf(exitcode.Internal, "%v", err)
			}
			boot, err := r.RunStage(ctx, lifecycle.StageNodeBootstrapped)
			if err != nil {
				return exitf(exitcode.Internal, "%s: %v", lifecycle.StageNodeBootstrapped, err)
			}
			if boot.Interrupted {
				return exitf(interruptCode(ctx), "%s interrupted; state saved", lifecycle.StageNodeBootstrapped)
			}
			printOutcome(cmd, boot)
			if boot.ExitCode == exitcode.Terminate {
				obs.status("TERMINATE: the node must be replaced")
				s.onTerminate(ctx, &sf, boot)
				// No READY=1: slurmd, which requires this unit, must not start.
				return &ExitError{Code: exitcode.Terminate}
			}
			obs.Ready()
			// No STOPPING=1 at the end: systemd would take it as "deactivating" and end the unit
			// inactive (dead) instead of keeping it active (exited) under RemainAfterExit=yes,
			// and a later `systemctl restart slurmd` would start the daemon again.
			ready, err := s.runReady(ctx, r, &sf, obs.status)
			if err != nil {
				var ee *ExitError
				if errors.As(err, &ee) {
					return err
				}
				return exitf(exitcode.Internal, "%s: %v", lifecycle.StageNodeReady, err)
			}
			if ready.Interrupted {
				return exitf(interruptCode(ctx), "%s interrupted; state saved", lifecycle.StageNodeReady)
			}
			printOutcome(cmd, ready)
			if ready.ExitCode == exitcode.Terminate {
				s.onTerminate(ctx, &sf, ready)
			}
			code := exitcode.Worst(boot.ExitCode, ready.ExitCode)
			obs.status("done: exit " + strconv.Itoa(code))
			if code != exitcode.OK {
				return &ExitError{Code: code}
			}
			return nil
		},
	}
	rf.register(cmd)
	sf.register(cmd, 10*time.Second)
	cmd.Flags().DurationVar(&extend, "extend-timeout", 90*time.Second, "EXTEND_TIMEOUT_USEC sent (every third of it) while nodeBootstrapped runs")
	return cmd
}
