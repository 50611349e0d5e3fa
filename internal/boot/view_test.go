package boot

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/exitcode"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/state"
)

// TestStageEnded is wait's question: has the stage ended on this boot, with what code.
func TestStageEnded(t *testing.T) {
	now := time.Now()
	view := func(status state.StageStatus, code int) *View {
		st := state.New("i-1", "boot-1", now)
		if status != "" {
			st.EnsureBoot("boot-1", now).Stages["nodeReady"] = &state.StageRun{Status: status, ExitCode: code, StartedAt: now}
		}
		return &View{State: st, InstanceID: "i-1", BootID: "boot-1"}
	}
	for _, tc := range []struct {
		status state.StageStatus
		code   int
		done   bool
		exit   int
	}{
		{"", 0, false, 0},
		{state.StageRunning, 0, false, 0},
		{state.StageInterrupted, 3, false, 0},
		{state.StageSucceeded, 0, true, 0},
		{state.StageFailed, 3, true, 3},
		{state.StageTerminated, 4, true, 4},
		{state.StageNotRegistered, 1, true, 1},
	} {
		done, err := view(tc.status, tc.code).StageEnded("nodeReady")
		require.Equal(t, tc.done, done, "%s", tc.status)
		require.Equal(t, tc.exit, exitcode.Code(err), "%s", tc.status)
	}
	v := view("", 0)
	v.State.Terminated = &state.Termination{Stage: "nodeBootstrapped", Script: "x"}
	done, err := v.StageEnded("nodeReady")
	require.True(t, done, "a terminated instance has nothing more to wait for")
	require.Equal(t, exitcode.Terminate, exitcode.Code(err))
	other := view(state.StageSucceeded, 0)
	other.InstanceID = "i-2"
	done, _ = other.StageEnded("nodeReady")
	require.False(t, done, "another instance's history says nothing of this one")
}
