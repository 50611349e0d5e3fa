package stage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/cache"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/exitcode"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/identity"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/paths"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/state"
	"github.com/pcs-lifecycle/pcs-lifecycle/pkg/lifecycle"
)

// memStore is the state in memory: events applied as the journal would, saves counted.
type memStore struct {
	st      *state.State
	saves   int
	saveErr error
}

func (m *memStore) Current() *state.State { return m.st }
func (m *memStore) Flush() error          { return nil }
func (m *memStore) Save() error {
	m.saves++
	return m.saveErr
}
func (m *memStore) Record(e *state.Event, _ bool) error {
	m.st.Apply(e)
	return nil
}

// memSource serves scripts by location.
type memSource map[string][]byte

func (m memSource) Download(_ context.Context, src lifecycle.ScriptSource, _ bool) ([]byte, error) {
	if b, ok := m[src.ScriptLocation]; ok {
		return b, nil
	}
	return nil, fmt.Errorf("%s: not found", src.ScriptLocation)
}

// node is a runner on a sandbox root whose scripts count their runs in dir/<name>.runs.
type node struct {
	t     *testing.T
	dir   string
	src   memSource
	store *memStore
	doc   *lifecycle.Document
	boot  string
}

func newNode(t *testing.T) *node {
	return &node{t: t, dir: t.TempDir(), src: memSource{}, boot: "boot-1",
		store: &memStore{st: state.New("i-0123", "boot-1", time.Now())},
		doc:   &lifecycle.Document{ScriptCachingPolicy: lifecycle.CacheOnce}}
}

// script adds a script to stage that records its run, then exits code.
func (n *node) script(stage, name string, policy lifecycle.ExecutionPolicy, onError lifecycle.OnError, code int) {
	loc := "s3://bucket/" + name + ".sh"
	n.src[loc] = []byte(fmt.Sprintf("#!/bin/sh\necho run >> %s/%s.runs\nexit %d\n", n.dir, name, code))
	s := lifecycle.Script{Name: name, ScriptSource: lifecycle.ScriptSource{ScriptLocation: loc}, ExecutionPolicy: policy, OnError: onError}
	if stage == lifecycle.StageNodeBootstrapped {
		n.doc.Stages.NodeBootstrapped = append(n.doc.Stages.NodeBootstrapped, s)
	} else {
		n.doc.Stages.NodeReady = append(n.doc.Stages.NodeReady, s)
	}
}

func (n *node) runner(force bool) *Runner {
	layout := paths.New(n.dir)
	return &Runner{Layout: layout, Log: zap.NewNop(), Doc: n.doc, Store: n.store, Cache: cache.New(layout),
		Node: identity.Node{InstanceID: "i-0123", BootID: n.boot, NodeID: "compute-1"}, Downloader: n.src, Force: force}
}

func (n *node) run(stage string) Outcome {
	n.t.Helper()
	out, err := n.runner(false).RunStage(context.Background(), stage)
	require.NoError(n.t, err)
	return out
}

// runs is how many times the script ran.
func (n *node) runs(name string) int {
	b, err := os.ReadFile(filepath.Join(n.dir, name+".runs"))
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	require.NoError(n.t, err)
	return strings.Count(string(b), "run\n")
}

func (n *node) thisBoot(stage, name string) *state.ScriptRun {
	return n.store.st.Boot(n.boot).Stages[stage].Script(name)
}

const boot = lifecycle.StageNodeBootstrapped

func TestOnError(t *testing.T) {
	cases := []struct {
		onError    lifecycle.OnError
		code       int
		status     state.StageStatus
		afterRuns  int
		afterState state.ScriptStatus
	}{
		{lifecycle.Continue, exitcode.Failed, state.StageFailed, 1, state.ScriptSucceeded},
		{lifecycle.StopSequence, exitcode.Failed, state.StageFailed, 0, state.ScriptNotRun},
		{lifecycle.Terminate, exitcode.Terminate, state.StageTerminated, 0, state.ScriptNotRun},
	}
	for _, tc := range cases {
		t.Run(string(tc.onError), func(t *testing.T) {
			n := newNode(t)
			n.script(boot, "bad", lifecycle.EveryBoot, tc.onError, 5)
			n.script(boot, "after", lifecycle.EveryBoot, lifecycle.Terminate, 0)
			out := n.run(boot)
			require.Equal(t, tc.code, out.ExitCode)
			require.Equal(t, tc.status, out.Status)
			require.Len(t, out.Failures, 1)
			require.Equal(t, Failure{Stage: boot, Script: "bad", Status: state.ScriptFailed, ExitCode: 5, OnError: tc.onError}, out.Failures[0])
			require.Equal(t, 1, n.runs("bad"))
			require.Equal(t, tc.afterRuns, n.runs("after"))
			require.Equal(t, tc.afterState, n.thisBoot(boot, "after").Status)
			if tc.onError == lifecycle.Terminate {
				require.NotNil(t, n.store.st.Terminated, "the instance is marked failed")
				require.Equal(t, "bad", n.store.st.Terminated.Script)
			} else {
				require.Nil(t, n.store.st.Terminated)
			}
		})
	}
}

func TestAlreadyRanThisBoot(t *testing.T) {
	n := newNode(t)
	n.script(boot, "once", lifecycle.EveryBoot, lifecycle.Continue, 3)
	first := n.run(boot)
	require.Equal(t, exitcode.Failed, first.ExitCode)

	again := n.run(boot)
	require.True(t, again.AlreadyRan)
	require.Equal(t, exitcode.Failed, again.ExitCode, "the recorded result")
	require.Equal(t, state.StageFailed, again.Status)
	require.Equal(t, 1, n.runs("once"), "nothing ran again")

	forced, err := n.runner(true).RunStage(context.Background(), boot)
	require.NoError(t, err)
	require.False(t, forced.AlreadyRan)
	require.Equal(t, 2, n.runs("once"), "--force runs it again")

	n.boot = "boot-2" // a reboot: EVERY_BOOT runs again
	require.Equal(t, exitcode.Failed, n.run(boot).ExitCode)
	require.Equal(t, 3, n.runs("once"))
}

// TestResume: a stage cut short (the executor killed while its second script ran) is resumed
// in the same boot: the finished script is not run again, the interrupted one is, and an
// earlier failure's onError holds again.
func TestResume(t *testing.T) {
	for _, onError := range []lifecycle.OnError{lifecycle.Continue, lifecycle.StopSequence} {
		t.Run(string(onError), func(t *testing.T) {
			n := newNode(t)
			n.script(boot, "failed-before", lifecycle.FirstBootOnly, onError, 2)
			n.script(boot, "cut", lifecycle.FirstBootOnly, lifecycle.Terminate, 0)
			n.script(boot, "last", lifecycle.FirstBootOnly, lifecycle.Terminate, 0)
			// What a killed executor leaves: the stage running, one script ended, one started.
			now := time.Now()
			b := n.store.st.EnsureBoot(n.boot, now)
			b.Stages[boot] = &state.StageRun{Status: state.StageRunning, StartedAt: now, PID: 999999}
			code := 2
			n.store.Record(&state.Event{BootID: n.boot, Stage: boot, Run: &state.ScriptRun{Name: "failed-before", Status: state.ScriptFailed, ExitCode: &code, StartedAt: &now}}, true)
			n.store.Record(&state.Event{BootID: n.boot, Stage: boot, Run: &state.ScriptRun{Name: "cut", Status: state.ScriptRunning, StartedAt: &now}}, false)

			out := n.run(boot)
			require.Equal(t, 0, n.runs("failed-before"), "a script that ended this boot is not run again")
			require.Equal(t, exitcode.Failed, out.ExitCode, "its failure still counts")
			require.Len(t, out.Failures, 1)
			if onError == lifecycle.StopSequence {
				require.Equal(t, 0, n.runs("cut"), "STOP_SEQUENCE still stops the stage")
				require.Equal(t, state.ScriptNotRun, n.thisBoot(boot, "cut").Status)
				return
			}
			require.Equal(t, 1, n.runs("cut"), "the interrupted script runs again")
			require.Equal(t, 1, n.runs("last"))
			require.Equal(t, state.StageFailed, out.Status)
		})
	}
}

func TestTerminatedInstanceRunsNothing(t *testing.T) {
	n := newNode(t)
	n.script(boot, "a", lifecycle.EveryBoot, lifecycle.Terminate, 0)
	n.store.st.Terminated = &state.Termination{BootID: "boot-0", Stage: boot, Script: "x"}
	out := n.run(boot)
	require.Equal(t, exitcode.Terminate, out.ExitCode)
	require.Equal(t, state.StageRefused, out.Status)
	require.Equal(t, 0, n.runs("a"))
	require.True(t, n.runner(false).Settled(boot))

	forced, err := n.runner(true).RunStage(context.Background(), boot)
	require.NoError(t, err)
	require.Equal(t, exitcode.OK, forced.ExitCode, "--force runs on a failed instance")
	require.Equal(t, 1, n.runs("a"))
}

func TestInterruptedBeforeAScriptChargesNone(t *testing.T) {
	n := newNode(t)
	n.script(boot, "a", lifecycle.EveryBoot, lifecycle.Terminate, 0)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out, err := n.runner(false).RunStage(ctx, boot)
	require.NoError(t, err)
	require.True(t, out.Interrupted)
	require.Equal(t, state.StageInterrupted, n.store.st.Boot(n.boot).Stages[boot].Status)
	require.Nil(t, n.thisBoot(boot, "a"), "no script recorded as started")
	require.Equal(t, 0, n.runs("a"))
}

func TestStateWriteFailureIsTheExecutors(t *testing.T) {
	n := newNode(t)
	n.script(boot, "a", lifecycle.EveryBoot, lifecycle.Terminate, 0)
	disk := errors.New("no space left on device")
	n.store.saveErr = disk
	_, err := n.runner(false).RunStage(context.Background(), boot)
	require.ErrorIs(t, err, disk)
	require.Equal(t, 0, n.runs("a"), "nothing runs on a state that cannot be written")
}

func TestDownloadFailureAppliesOnError(t *testing.T) {
	n := newNode(t)
	n.script(boot, "gone", lifecycle.EveryBoot, lifecycle.StopSequence, 0)
	n.script(boot, "after", lifecycle.EveryBoot, lifecycle.Terminate, 0)
	delete(n.src, "s3://bucket/gone.sh")
	out := n.run(boot)
	require.Equal(t, exitcode.Failed, out.ExitCode)
	require.Equal(t, state.ScriptDownloadFailed, out.Failures[0].Status)
	require.Contains(t, out.Failures[0].Err, "not found")
	require.Equal(t, 0, n.runs("after"))
}

func TestBootFailuresAndSettled(t *testing.T) {
	n := newNode(t)
	n.script(boot, "bad", lifecycle.EveryBoot, lifecycle.Continue, 4)
	n.script(lifecycle.StageNodeReady, "r", lifecycle.EveryBoot, lifecycle.Continue, 0)
	r := n.runner(false)
	require.False(t, r.Settled(boot))
	require.True(t, r.HasScripts(lifecycle.StageNodeReady))
	n.run(boot)
	require.True(t, r.Settled(boot))
	require.False(t, r.Settled(lifecycle.StageNodeReady))
	fails := r.BootFailures()
	require.Len(t, fails, 1)
	require.Equal(t, lifecycle.Continue, fails[0].OnError, "onError comes from the document")
	require.Equal(t, 4, fails[0].ExitCode)
}

func TestScriptThatCannotStartIsItsFailure(t *testing.T) {
	n := newNode(t)
	n.script(boot, "noexec", lifecycle.EveryBoot, lifecycle.Continue, 0)
	n.src["s3://bucket/noexec.sh"] = []byte("#!/nonexistent/interpreter\n")
	out := n.run(boot)
	require.Equal(t, exitcode.Failed, out.ExitCode, "a script failure, not the executor's")
	require.Equal(t, 126, out.Failures[0].ExitCode)
	require.Contains(t, out.Failures[0].Err, "/nonexistent/interpreter")
	logText, err := os.ReadFile(paths.New(n.dir).ScriptLog(boot, "noexec"))
	require.NoError(t, err)
	require.Contains(t, string(logText), "pcs-lifecycle: cannot execute:")
	require.Contains(t, string(logText), "[end noexec exit=126")
}
