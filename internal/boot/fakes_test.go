package boot

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/exitcode"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/paths"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/slurm"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/stage"
	"github.com/pcs-lifecycle/pcs-lifecycle/pkg/lifecycle"
)

// events is the order in which the fakes were called, one line each.
type events struct {
	mu    sync.Mutex
	lines []string
}

func (e *events) add(format string, a ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.lines = append(e.lines, fmt.Sprintf(format, a...))
}

func (e *events) all() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.lines...)
}

// index of the first line starting with prefix, -1 when none.
func (e *events) index(prefix string) int {
	for i, l := range e.all() {
		if strings.HasPrefix(l, prefix) {
			return i
		}
	}
	return -1
}

// fakeStages is the stage runner: each stage ends with the outcome set for it.
type fakeStages struct {
	ev       *events
	outcomes map[string]stage.Outcome
	settled  map[string]bool
	scripts  map[string]bool
	earlier  []stage.Failure // failures recorded before this run (an earlier stage)
	failures []stage.Failure
	runErr   error
	// cancel, when set, is called as the stage runs (a signal arriving then).
	cancel   func()
	recorded string
}

func newFakeStages(ev *events) *fakeStages {
	return &fakeStages{ev: ev, outcomes: map[string]stage.Outcome{}, settled: map[string]bool{},
		scripts: map[string]bool{lifecycle.StageNodeBootstrapped: true, lifecycle.StageNodeReady: true}}
}

func (f *fakeStages) Prefetch(context.Context) error { f.ev.add("prefetch"); return nil }

func (f *fakeStages) RunStage(ctx context.Context, name string) (stage.Outcome, error) {
	f.ev.add("stage %s", name)
	if f.runErr != nil {
		return stage.Outcome{}, f.runErr
	}
	if f.cancel != nil {
		f.cancel()
		return stage.Outcome{Stage: name, Interrupted: true, ExitCode: 3}, nil
	}
	out, ok := f.outcomes[name]
	if !ok {
		out = stage.Outcome{Stage: name}
	}
	f.failures = append(f.failures, out.Failures...)
	return out, nil
}

func (f *fakeStages) Settled(name string) bool    { return f.settled[name] }
func (f *fakeStages) HasScripts(name string) bool { return f.scripts[name] }
func (f *fakeStages) BootFailures() []stage.Failure {
	return append(append([]stage.Failure(nil), f.earlier...), f.failures...)
}

func (f *fakeStages) RecordRegistrationTimeout(name, why string) error {
	f.ev.add("record not_registered %s", name)
	f.recorded = why
	return nil
}

// fakeSlurm is one node of a controller, drained and resumed as scontrol would (the client's
// guards included: another's drain is never touched).
type fakeSlurm struct {
	ev        *events
	waitErr   error // what WaitRegistered returns
	stateErr  error // what NodeState returns
	drained   bool
	reason    string
	comment   string
	onWait    func() // called while waiting (a signal arriving)
	waitCalls int
}

func (f *fakeSlurm) NodeState(context.Context, string) (slurm.State, error) {
	if f.stateErr != nil {
		return slurm.State{}, f.stateErr
	}
	st := slurm.State{States: []string{"IDLE"}, Reason: f.reason, Comment: f.comment}
	if f.drained {
		st.States = append(st.States, "DRAIN")
	}
	return st, nil
}

func (f *fakeSlurm) WaitRegistered(ctx context.Context, node string, _, timeout time.Duration, onPoll func(slurm.State, error)) error {
	f.ev.add("wait %s", node)
	f.waitCalls++
	if f.onWait != nil {
		f.onWait()
		return fmt.Errorf("wait for node %s to register: %w", node, ctx.Err())
	}
	st, err := f.NodeState(ctx, node)
	onPoll(st, err)
	return f.waitErr
}

func (f *fakeSlurm) Drain(_ context.Context, _, reason string) error {
	if f.drained && f.reason != reason {
		return fmt.Errorf("drain: %w", slurm.ErrForeignDrain)
	}
	f.ev.add("drain %s", reason)
	f.drained, f.reason = true, reason
	return nil
}

func (f *fakeSlurm) ReplaceDrain(_ context.Context, _, oldReason, newReason string) error {
	if f.drained && f.reason != oldReason && f.reason != newReason {
		return fmt.Errorf("drain: %w", slurm.ErrForeignDrain)
	}
	f.ev.add("replace drain %s", newReason)
	f.drained, f.reason = true, newReason
	return nil
}

func (f *fakeSlurm) Resume(_ context.Context, _, onlyIfReason string) error {
	if !f.drained {
		return nil
	}
	if f.reason != onlyIfReason {
		return fmt.Errorf("resume: %w", slurm.ErrForeignDrain)
	}
	f.ev.add("resume")
	f.drained, f.reason = false, ""
	return nil
}

func (f *fakeSlurm) SetComment(_ context.Context, _, comment string) error {
	f.ev.add("comment %s", comment)
	f.comment = comment
	return nil
}

// fakeNotify records what systemd was told.
type fakeNotify struct{ ev *events }

func (n fakeNotify) Ready() error { n.ev.add("READY=1"); return nil }
func (n fakeNotify) Status(s string) error {
	n.ev.add("STATUS=%s", s)
	return nil
}
func (n fakeNotify) ExtendTimeout(d time.Duration) error {
	n.ev.add("EXTEND_TIMEOUT_USEC=%d", d.Microseconds())
	return nil
}

// fakeClock stands still; its ticks come when the test sends them.
type fakeClock struct {
	ticks   chan time.Time
	stopped chan struct{}
}

func newFakeClock() *fakeClock {
	return &fakeClock{ticks: make(chan time.Time), stopped: make(chan struct{})}
}

func (c *fakeClock) Now() time.Time { return time.Unix(1792543659, 0) }
func (c *fakeClock) Tick(time.Duration) (<-chan time.Time, func()) {
	return c.ticks, func() { close(c.stopped) }
}

// fakeCommands records the programs run.
type fakeCommands struct{ ev *events }

func (c fakeCommands) Run(_ context.Context, argv []string) ([]byte, error) {
	c.ev.add("exec %s", strings.Join(argv, " "))
	return nil, nil
}

// rig is a Boot with every collaborator faked.
type rig struct {
	ev     *events
	stages *fakeStages
	slurm  *fakeSlurm
	clock  *fakeClock
	stderr *bytes.Buffer
	boot   *Boot
	ended  []StageEnd
	steps  []Step
}

func newRig(t *testing.T, c Config) *rig {
	ev := &events{}
	r := &rig{ev: ev, stages: newFakeStages(ev), slurm: &fakeSlurm{ev: ev}, clock: newFakeClock(), stderr: &bytes.Buffer{}}
	if c.NodeID == "" {
		c.NodeID = "compute-1"
	}
	if c.RegistrationTimeout == 0 {
		c.RegistrationTimeout = time.Minute
	}
	if c.OnTerminate == "" {
		c.OnTerminate = "exit"
	}
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "dev"), 0o755); err != nil {
		t.Fatal(err)
	}
	r.boot = &Boot{Config: c, Log: zap.NewNop(), Layout: paths.New(root), Stages: r.stages, Slurm: r.slurm,
		Notify: fakeNotify{ev}, Clock: r.clock, Commands: fakeCommands{ev}, Stderr: r.stderr}
	r.boot.Observers = []Observer{recorder{r}}
	return r
}

// recorder is an Observer writing the stage ends into the events (and the steps, apart).
type recorder struct{ r *rig }

func (o recorder) Step(_ context.Context, s Step) {
	o.r.steps = append(o.r.steps, s)
}

func (o recorder) StageEnded(_ context.Context, e StageEnd) {
	line := fmt.Sprintf("hook %s exit=%d", e.Stage, e.Outcome.ExitCode)
	if e.Err != nil {
		line = fmt.Sprintf("hook %s error=%d", e.Stage, exitcode.Code(e.Err))
	}
	if !e.Final {
		line += " (more)"
	}
	o.r.ev.add("%s", line)
	o.r.ended = append(o.r.ended, e)
}

// fail is an outcome of stage with one failed script under onError.
func fail(stageName, script string, onError lifecycle.OnError, code int) stage.Outcome {
	exit := 3
	if onError == lifecycle.Terminate {
		exit = 4
	}
	return stage.Outcome{Stage: stageName, ExitCode: exit, Failures: []stage.Failure{
		{Stage: stageName, Script: script, ExitCode: code, OnError: onError},
	}}
}

// steps are the events without the STATUS= lines (the per-stage tests look at the sequence).
func (r *rig) calls() []string {
	var out []string
	for _, l := range r.ev.all() {
		if !strings.HasPrefix(l, "STATUS=") {
			out = append(out, l)
		}
	}
	return out
}
