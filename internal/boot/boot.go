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

// Hook hears of the boot's progress: the command line prints a stage's outcome through one,
// and further steps after a stage (evidence, metrics) hang here. A hook cannot fail the boot;
// it logs its own problems.
type Hook interface {
	StageEnded(ctx context.Context, out stage.Outcome)
}

// HookFunc is a function as a Hook.
type HookFunc func(ctx context.Context, out stage.Outcome)

// StageEnded calls f.
func (f HookFunc) StageEnded(ctx context.Context, out stage.Outcome) { f(ctx, out) }

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
	Log      *zap.Logger
	Layout   paths.Layout
	Stages   Stages
	Slurm    Slurm
	Notify   notify.Notifier
	Clock    Clock
	Commands Commands
	Stderr   io.Writer // the journal under systemd: the TERMINATE summary
	Hooks    []Hook
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

func (b *Boot) stageEnded(ctx context.Context, out stage.Outcome) {
	for _, h := range b.Hooks {
		h.StageEnded(ctx, out)
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
