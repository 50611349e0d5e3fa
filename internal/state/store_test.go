package state_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/state"
)

func paths(t *testing.T) (string, string) {
	d := filepath.Join(t.TempDir(), "state")
	return filepath.Join(d, "state.json"), filepath.Join(d, "state.journal")
}

func code(n int) *int { return &n }

func startEnd(t *testing.T, s *state.Store, boot, stage, name string, exit int) {
	t.Helper()
	now := time.Now().UTC()
	require.NoError(t, s.Record(&state.Event{BootID: boot, Stage: stage, Run: &state.ScriptRun{Name: name, Status: state.ScriptRunning, StartedAt: &now}}, false))
	st := state.ScriptSucceeded
	if exit != 0 {
		st = state.ScriptFailed
	}
	require.NoError(t, s.Record(&state.Event{BootID: boot, Stage: stage, Run: &state.ScriptRun{Name: name, Status: st, ExitCode: code(exit), StartedAt: &now}}, true))
}

func newStore(t *testing.T, snap, journal string) *state.Store {
	t.Helper()
	s, err := state.Open(snap, journal)
	require.NoError(t, err)
	require.Nil(t, s.State)
	require.NoError(t, s.Reset(state.New("i-1", "b1", time.Now())))
	b := s.State.EnsureBoot("b1", time.Now())
	b.Stages["nodeBootstrapped"] = &state.StageRun{Status: state.StageRunning}
	require.NoError(t, s.Save())
	return s
}

func TestJournalReplayedOnRead(t *testing.T) {
	snap, journal := paths(t)
	s := newStore(t, snap, journal)
	startEnd(t, s, "b1", "nodeBootstrapped", "a", 0)
	startEnd(t, s, "b1", "nodeBootstrapped", "b", 2)
	// A reader sees the journal folded in without any snapshot having been written since.
	st, err := state.Read(snap, journal)
	require.NoError(t, err)
	ha, hb := st.Scripts["nodeBootstrapped/a"], st.Scripts["nodeBootstrapped/b"]
	require.True(t, ha.Ended)
	require.False(t, ha.Pending)
	require.Equal(t, 1, ha.Runs)
	require.Equal(t, state.ScriptFailed, hb.Last.Status)
	require.Equal(t, 2, *hb.Last.ExitCode)
	require.Len(t, st.Boot("b1").Stages["nodeBootstrapped"].Scripts, 2)
	require.NoError(t, s.Close())
}

func TestSaveFoldsAndEmptiesJournal(t *testing.T) {
	snap, journal := paths(t)
	s := newStore(t, snap, journal)
	startEnd(t, s, "b1", "nodeBootstrapped", "a", 0)
	require.NoError(t, s.Save())
	fi, err := os.Stat(journal)
	require.NoError(t, err)
	require.Zero(t, fi.Size())
	st, err := state.Read(snap, journal)
	require.NoError(t, err)
	require.Equal(t, 1, st.Scripts["nodeBootstrapped/a"].Runs)
	require.NoError(t, s.Close())
}

func TestStaleJournalEventsIgnored(t *testing.T) {
	// A crash between the snapshot's rename and the journal's truncation leaves events the
	// snapshot already holds: they must not count twice.
	snap, journal := paths(t)
	s := newStore(t, snap, journal)
	startEnd(t, s, "b1", "nodeBootstrapped", "a", 0)
	old, err := os.ReadFile(journal)
	require.NoError(t, err)
	require.NoError(t, s.Save())
	require.NoError(t, s.Close())
	require.NoError(t, os.WriteFile(journal, old, 0o600))
	st, err := state.Read(snap, journal)
	require.NoError(t, err)
	require.Equal(t, 1, st.Scripts["nodeBootstrapped/a"].Runs)
}

func TestTornLastLineIgnoredAndCut(t *testing.T) {
	snap, journal := paths(t)
	s := newStore(t, snap, journal)
	startEnd(t, s, "b1", "nodeBootstrapped", "a", 0)
	require.NoError(t, s.Close())
	f, err := os.OpenFile(journal, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(`{"seq":99,"boot_id":"b1","stage":"nodeBootstrapped","run":{"name":"b","sta`)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	st, err := state.Read(snap, journal)
	require.NoError(t, err)
	require.Nil(t, st.Scripts["nodeBootstrapped/b"])

	// The next writer cuts the torn tail, so its own events start on a line of their own.
	s2, err := state.Open(snap, journal)
	require.NoError(t, err)
	startEnd(t, s2, "b1", "nodeBootstrapped", "c", 0)
	require.NoError(t, s2.Close())
	st, err = state.Read(snap, journal)
	require.NoError(t, err)
	require.True(t, st.Scripts["nodeBootstrapped/c"].Ended)
	require.True(t, st.Scripts["nodeBootstrapped/a"].Ended)
}

func TestCorruptionIsATypedError(t *testing.T) {
	tests := []struct {
		name           string
		snap, journal  string
		wantPathSuffix string
	}{
		{"snapshot not JSON", "{not json", "", "state.json"},
		{"snapshot of another version", `{"version":99,"instance_id":"i","first_boot_id":"b"}`, "", "state.json"},
		{"snapshot missing instance", `{"version":1}`, "", "state.json"},
		{"snapshot unknown field", `{"version":1,"instance_id":"i","first_boot_id":"b","bogus":1}`, "", "state.json"},
		{"journal garbage in the middle", `{"version":1,"instance_id":"i","first_boot_id":"b"}`, "garbage\n{\"seq\":1}\n", "state.journal"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap, journal := paths(t)
			require.NoError(t, os.MkdirAll(filepath.Dir(snap), 0o700))
			require.NoError(t, os.WriteFile(snap, []byte(tt.snap), 0o600))
			if tt.journal != "" {
				require.NoError(t, os.WriteFile(journal, []byte(tt.journal), 0o600))
			}
			_, err := state.Read(snap, journal)
			var ce *state.CorruptError
			require.True(t, errors.As(err, &ce), "got %v", err)
			require.True(t, filepath.Base(ce.Path) == tt.wantPathSuffix, ce.Path)
			// Opening for writing refuses too: never a silent reset.
			_, err = state.Open(snap, journal)
			require.True(t, errors.As(err, &ce))
		})
	}
}

func TestModes(t *testing.T) {
	snap, journal := paths(t)
	s := newStore(t, snap, journal)
	startEnd(t, s, "b1", "nodeBootstrapped", "a", 0)
	require.NoError(t, s.Close())
	for _, p := range []string{snap, journal} {
		fi, err := os.Stat(p)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), p)
	}
	fi, err := os.Stat(filepath.Dir(snap))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
}

func TestResetKeepsOldInstance(t *testing.T) {
	snap, journal := paths(t)
	s := newStore(t, snap, journal)
	require.NoError(t, s.Reset(state.New("i-2", "b9", time.Now())))
	require.NoError(t, s.Close())
	old, err := state.Read(snap+".i-1", filepath.Join(t.TempDir(), "none"))
	require.NoError(t, err)
	require.Equal(t, "i-1", old.InstanceID)
	st, err := state.Read(snap, journal)
	require.NoError(t, err)
	require.Equal(t, "i-2", st.InstanceID)
	require.Equal(t, "b9", st.FirstBootID)
}

func TestLock(t *testing.T) {
	p := filepath.Join(t.TempDir(), "lock")
	l, err := state.Acquire(t.Context(), p, time.Second, "first holder")
	require.NoError(t, err)
	held, who := state.Held(p)
	require.True(t, held)
	require.Equal(t, "first holder", who)
	_, err = state.Acquire(t.Context(), p, 150*time.Millisecond, "second")
	var busy *state.LockBusyError
	require.True(t, errors.As(err, &busy), "got %v", err)
	require.Contains(t, busy.Error(), "first holder")
	l.Release()
	held, _ = state.Held(p)
	require.False(t, held)
	l2, err := state.Acquire(t.Context(), p, time.Second, "second")
	require.NoError(t, err)
	l2.Release()
}

// BenchmarkScriptEvents is the state work of one script (its start and end events) on the
// stage's path; BenchmarkScriptEventsFlushed adds the end's fdatasync, awaited.
func BenchmarkScriptEvents(b *testing.B)        { benchScriptEvents(b, false) }
func BenchmarkScriptEventsFlushed(b *testing.B) { benchScriptEvents(b, true) }

func benchScriptEvents(b *testing.B, flush bool) {
	d := b.TempDir()
	s, err := state.Open(filepath.Join(d, "s", "state.json"), filepath.Join(d, "s", "state.journal"))
	require.NoError(b, err)
	require.NoError(b, s.Reset(state.New("i", "b", time.Now())))
	s.State.EnsureBoot("b", time.Now()).Stages["x"] = &state.StageRun{}
	now := time.Now()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		require.NoError(b, s.Record(&state.Event{BootID: "b", Stage: "x", Run: &state.ScriptRun{Name: "s", Status: state.ScriptRunning, StartedAt: &now}}, false))
		require.NoError(b, s.Record(&state.Event{BootID: "b", Stage: "x", Run: &state.ScriptRun{Name: "s", Status: state.ScriptSucceeded, ExitCode: code(0), StartedAt: &now}}, true))
		if flush {
			require.NoError(b, s.Flush())
		}
	}
	b.StopTimer()
	require.NoError(b, s.Close())
}

func BenchmarkAtomicSnapshot(b *testing.B) {
	d := b.TempDir()
	s, err := state.Open(filepath.Join(d, "s", "state.json"), filepath.Join(d, "s", "state.journal"))
	require.NoError(b, err)
	require.NoError(b, s.Reset(state.New("i", "b", time.Now())))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_ = s.Save()
	}
}

func TestFlushMakesDurableEventsReadable(t *testing.T) {
	snap, journal := paths(t)
	s := newStore(t, snap, journal)
	for i := 0; i < 50; i++ {
		startEnd(t, s, "b1", "nodeBootstrapped", "a", 0)
	}
	require.NoError(t, s.Flush())
	st, err := state.Read(snap, journal)
	require.NoError(t, err)
	require.Equal(t, 50, st.Scripts["nodeBootstrapped/a"].Runs)
	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "Close is idempotent")
}

// TestFirstBootKeptPastMaxBoots: the first boot's record decides which FIRST_BOOT_ONLY scripts
// are owed on every later boot, so trimming old boots never drops it.
func TestFirstBootKeptPastMaxBoots(t *testing.T) {
	st := state.New("i", "first", time.Now())
	st.EnsureBoot("first", time.Now()).Stages["nodeBootstrapped"] = &state.StageRun{Status: state.StageFailed}
	for i := 0; i < 3*state.MaxBoots; i++ {
		st.EnsureBoot(fmt.Sprintf("b%d", i), time.Now())
	}
	require.Len(t, st.Boots, state.MaxBoots)
	require.NotNil(t, st.FirstBootStage("nodeBootstrapped"))
	require.Equal(t, fmt.Sprintf("b%d", 3*state.MaxBoots-1), st.Boots[len(st.Boots)-1].BootID)
}
