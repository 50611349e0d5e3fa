package timeline_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/state"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/timeline"
)

func ip(i int) *int { return &i }

// boot is a daemon's boot: downloads, nodeBootstrapped (two scripts, one skipped), READY=1,
// a registration wait, nodeReady (one script killed by a signal), an evidence upload.
func boot() *state.State {
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	tp := func(ms int) *time.Time { t := at(ms); return &t }
	st := state.New("i-0abc", "b1", t0)
	b := st.EnsureBoot("b1", t0)
	b.AddMark(state.Mark{Kind: state.MarkExecutorStarted, At: at(0), Detail: "daemon"})
	b.AddMark(state.Mark{Kind: state.MarkDownloads, At: at(20), DurationMS: 180, Detail: "3 scripts, 0 failed"})
	b.Stages["nodeBootstrapped"] = &state.StageRun{Status: state.StageSucceeded, StartedAt: at(10), EndedAt: tp(3210), Scripts: []*state.ScriptRun{
		{Name: "setup", Status: state.ScriptSucceeded, ExitCode: ip(0), StartedAt: tp(210), DurationMS: 1000},
		{Name: "first only", Status: state.ScriptSkipped, Reason: "FIRST_BOOT_ONLY"},
		{Name: "mount fs", Status: state.ScriptSucceeded, ExitCode: ip(0), StartedAt: tp(1210), DurationMS: 2000},
	}}
	b.AddMark(state.Mark{Kind: state.MarkReady, At: at(3220)})
	b.AddMark(state.Mark{Kind: state.MarkRegistrationWait, Stage: "nodeReady", At: at(3230), DurationMS: 4500, Detail: "registered"})
	b.Stages["nodeReady"] = &state.StageRun{Status: state.StageFailed, ExitCode: 3, StartedAt: at(7730), EndedAt: tp(8800), Scripts: []*state.ScriptRun{
		{Name: "join", Status: state.ScriptFailed, ExitCode: ip(-1), Signal: "KILL", StartedAt: tp(7740), DurationMS: 1050},
	}}
	b.AddMark(state.Mark{Kind: state.MarkEvidence, Stage: "nodeReady", At: at(8810), DurationMS: 90, Detail: "uploaded"})
	return st
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if os.Getenv("UPDATE_GOLDEN") != "" {
		require.NoError(t, os.WriteFile(p, got, 0o644))
	}
	want, err := os.ReadFile(p)
	require.NoError(t, err, "UPDATE_GOLDEN=1 writes it")
	require.Equal(t, string(want), string(got))
}

func TestBuild(t *testing.T) {
	tl := timeline.Build(boot(), "b1")
	require.NotNil(t, tl)
	var names []string
	for _, e := range tl.Entries {
		names = append(names, e.Name)
	}
	require.Equal(t, []string{"executor started", "nodeBootstrapped", "downloads", "nodeBootstrapped/setup", "nodeBootstrapped/mount fs",
		"READY=1", "registration wait", "nodeReady", "nodeReady/join", "evidence upload"}, names)
	require.EqualValues(t, 8900, tl.TotalMS)
	require.EqualValues(t, 8800, *tl.ReadyEndMS)
	var slow []string
	for _, e := range tl.ByDuration() {
		slow = append(slow, e.Name)
	}
	require.Equal(t, []string{"registration wait", "nodeBootstrapped", "nodeBootstrapped/mount fs", "nodeReady", "nodeReady/join",
		"nodeBootstrapped/setup", "downloads", "evidence upload"}, slow)
	require.Nil(t, timeline.Build(boot(), "b2"), "a boot the state does not hold")
	require.Nil(t, timeline.Build(nil, "b1"))
}

func TestText(t *testing.T) {
	for _, byDuration := range []bool{false, true} {
		var buf bytes.Buffer
		require.NoError(t, timeline.WriteText(&buf, timeline.Build(boot(), "b1"), byDuration))
		name := "timeline.txt"
		if byDuration {
			name = "timeline-by-duration.txt"
		}
		golden(t, name, buf.Bytes())
	}
}

func TestJSON(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, timeline.WriteJSON(&buf, timeline.Build(boot(), "b1"), false))
	golden(t, "timeline.json", buf.Bytes())
	var back timeline.Timeline
	require.NoError(t, json.Unmarshal(buf.Bytes(), &back))
	require.Len(t, back.Entries, 10)

	buf.Reset()
	require.NoError(t, timeline.WriteJSON(&buf, timeline.Build(boot(), "b1"), true))
	require.NoError(t, json.Unmarshal(buf.Bytes(), &back))
	require.Len(t, back.Entries, 8, "only steps with a duration")
	require.Equal(t, "registration wait", back.Entries[0].Name)
}

func TestSeconds(t *testing.T) {
	require.Equal(t, "0.000s", timeline.Seconds(0))
	require.Equal(t, "1.234s", timeline.Seconds(1234))
	require.Equal(t, "2min 3.456s", timeline.Seconds(123456))
}
