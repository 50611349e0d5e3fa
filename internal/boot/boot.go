// Package boot is the node's boot as one sequence: settle the configuration (the new-instance
// policy included), download, nodeBootstrapped, the ready signal, the Slurm registration wait,
// the job hold, nodeReady, the Slurm outcome and the TERMINATE action. `daemon` runs all of it
// (Boot.Daemon), `run --stage` one stage (Boot.Stage); the command line only parses and
// reports.
//
// Its collaborators sit behind small interfaces (Stages, Slurm, notify.Notifier, Clock,
// Commands) so the sequence is tested with hand-written fakes; the real parts are wired by
// Session.Boot and tested by the black-box suites (internal/e2e).
package boot

import (
	"context"
	"io"
	"time"

	"go.uber.org/zap"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/notify"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/paths"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/slurm"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/stage"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/state"
)

// Stages is what the boot needs of the stage runner (*stage.Runner).
type Stages interface {
	Prefetch(ctx context.Context) error
	RunStage(ctx context.Context, name string) (stage.Outcome, error)
	// Settled: RunStage would run nothing (instance terminated, or stage ended this boot).
	Settled(name string) bool
	HasScripts(name string) bool
	BootFailures() []stage.Failure
	RecordRegistrationTimeout(name, why string) error
}

// Slurm is what the boot needs of the Slurm client (*slurm.Client).
type Slurm interface {
	NodeState(ctx context.Context, node string) (slurm.State, error)
	WaitRegistered(ctx context.Context, node string, interval, timeout time.Duration, onPoll func(slurm.State, error)) error
	Drain(ctx context.Context, node, reason string) error
	ReplaceDrain(ctx context.Context, node, oldReason, newReason string) error
	Resume(ctx context.Context, node, onlyIfReason string) error
	SetComment(ctx context.Context, node, comment string) error
}

// Clock is the time the sequence reads and the ticks it waits on.
type Clock interface {
	Now() time.Time
	// Tick returns a channel that receives every d, and the function that stops it.
	Tick(d time.Duration) (<-chan time.Time, func())
}

// Commands runs the TERMINATE action's program (argv[0] is a path) and returns its output.
type Commands interface {
	Run(ctx context.Context, argv []string) ([]byte, error)
}

// WaitReporter tells people how a long wait goes (internal/progress): what it waits for, how
// it checks and its limit at Begin, each answer, how it ended.
type WaitReporter interface {
	Begin(what, how string, limit time.Duration)
	Observe(answer string)
	Done(outcome string)
}

type nopWait struct{}

func (nopWait) Begin(string, string, time.Duration) {}
func (nopWait) Observe(string)                      {}
func (nopWait) Done(string)                         {}

// Observer hears the boot's progress: the steps of its timeline and the end of each stage.
// The command line prints outcomes through one; the steps after a stage (evidence, metrics)
// hang here too. An observer cannot change the boot's course or its exit code: it logs its own
// problems. Embed NopObserver to implement only one of the methods.
type Observer interface {
	Step(ctx context.Context, s Step)
	StageEnded(ctx context.Context, e StageEnd)
}

// StepKind names a step of the boot.
type StepKind string

// The steps, in the order a daemon takes them.
const (
	// StepStarted: the sequence begins (Detail: "daemon" or "run --stage S").
	StepStarted StepKind = "started"
	// StepReady: READY=1 was sent (daemon only).
	StepReady StepKind = "ready"
	// StepRegistration: the Slurm registration wait ended (At its start, Duration, Detail: how
	// it ended: registered, not configured, timed out, interrupted, or the error).
	StepRegistration StepKind = "registration"
)

// Step is one step of the boot.
type Step struct {
	Kind     StepKind
	Stage    string
	At       time.Time
	Duration time.Duration
	Detail   string
}

// StageEnd is how a stage of the boot ended.
type StageEnd struct {
	Stage   string
	Outcome stage.Outcome
	// Err is the executor's own failure (state, disk, registration timeout) or the
	// interruption, with its exit code (exitcode.Code); nil when the stage ran to its end.
	Err error
	// Final: no other stage follows in this process (false only for a daemon's
	// nodeBootstrapped that lets the boot go on to nodeReady).
	Final bool
}

// NopObserver ignores everything; embed it to implement part of Observer.
type NopObserver struct{}

// Step does nothing.
func (NopObserver) Step(context.Context, Step) {}

// StageEnded does nothing.
func (NopObserver) StageEnded(context.Context, StageEnd) {}

// Config is how the boot behaves (the flags of run and daemon).
type Config struct {
	NodeID              string
	RegistrationTimeout time.Duration // 0: never wait
	RegistrationPoll    time.Duration
	HoldJobs            bool   // --hold-jobs-until-ready
	DrainOnFailure      bool   // --drain-on-failure
	OnTerminate         string // exit, poweroff, command:<shell command>
	Console             string // where the TERMINATE summary goes besides Stderr
	ExtendTimeout       time.Duration
}

// Boot is one run of the node's boot sequence.
type Boot struct {
	Config
	Log       *zap.Logger
	Layout    paths.Layout
	Stages    Stages
	Slurm     Slurm
	Notify    notify.Notifier
	Clock     Clock
	Commands  Commands
	Stderr    io.Writer // the journal under systemd: the TERMINATE summary
	Observers []Observer
	Wait      WaitReporter // the registration wait's progress (nil: none)
	// FileLog writes executor.log only: for events whose stderr line is the command's own
	// message (an interruption), not to be printed twice. nil: Log.
	FileLog *zap.Logger

	daemon bool // the whole boot runs in this process (Daemon)
}

// ScriptStarted reports the running script to systemd (STATUS=); the runner calls it.
func (b *Boot) ScriptStarted(stageName, name string) { b.status(stageName + "/" + name) }

// ScriptEnded reports the script's end to systemd.
func (b *Boot) ScriptEnded(stageName, name string, run *state.ScriptRun) {
	b.status(stageName + "/" + name + " " + string(run.Status))
}

func (b *Boot) status(s string) {
	if err := b.Notify.Status(s); err != nil {
		b.Log.Debug("sd_notify STATUS failed", zap.Error(err))
	}
}

func (b *Boot) step(ctx context.Context, s Step) {
	for _, o := range b.Observers {
		o.Step(ctx, s)
	}
}

// SystemClock is the real clock.
type SystemClock struct{}

// Now is time.Now.
func (SystemClock) Now() time.Time { return time.Now() }

// Tick is a time.Ticker.
func (SystemClock) Tick(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTicker(d)
	return t.C, t.Stop
}
