package nodestatus_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/exitcode"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/nodestatus"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/state"
	"github.com/pcs-lifecycle/pcs-lifecycle/pkg/lifecycle"
	"github.com/pcs-lifecycle/pcs-lifecycle/pkg/status"
)

var t0 = time.Date(2026, 11, 30, 9, 39, 43, 0, time.UTC)

const doc = `{"stages": {
  "nodeBootstrapped": [
    {"name": "fail-stop-sequence", "scriptSource": {"scriptLocation": "s3://bkt/fail.sh"}, "onError": "STOP_SEQUENCE"},
    {"name": "record-after-fail", "scriptSource": {"scriptLocation": "s3://bkt/rec.sh"}},
    {"name": "every", "scriptSource": {"scriptLocation": "s3://bkt/every.sh"}, "executionPolicy": "EVERY_BOOT"}],
  "nodeReady": [
    {"name": "ready-check-with-a-rather-long-name", "scriptSource": {"scriptLocation": "s3://bkt/ready.sh"}, "onError": "CONTINUE"}]}}`

func parse(t *testing.T) *lifecycle.Document {
	d, _, err := lifecycle.Parse([]byte(doc), lifecycle.Options{})
	require.NoError(t, err)
	return d
}

func code(n int) *int { return &n }

// ran records a stage run of boot with the given script runs, ended with exit.
func ran(st *state.State, boot, stage string, exit int, runs ...*state.ScriptRun) {
	b := st.EnsureBoot(boot, t0)
	end := t0.Add(2 * time.Second)
	sr := &state.StageRun{Status: state.StageSucceeded, StartedAt: t0, EndedAt: &end, ExitCode: exit}
	switch exit {
	case 3:
		sr.Status = state.StageFailed
	case 4:
		sr.Status = state.StageTerminated
	}
	b.Stages[stage] = sr
	for _, r := range runs {
		if r.Status.Ended() {
			st.Apply(&state.Event{BootID: boot, Stage: stage, Run: &state.ScriptRun{Name: r.Name, Status: state.ScriptRunning, StartedAt: &t0}})
		}
		st.Apply(&state.Event{BootID: boot, Stage: stage, Run: r})
	}
}

// firstBoot: fail-stop-sequence failed under STOP_SEQUENCE, record-after-fail not run.
func firstBoot(t *testing.T) *state.State {
	st := state.New("i-1", "boot-1", t0)
	st.ConfigSHA = "x"
	ran(st, "boot-1", lifecycle.StageNodeBootstrapped, 3,
		&state.ScriptRun{Name: "fail-stop-sequence", Status: state.ScriptFailed, ExitCode: code(1), StartedAt: &t0, DurationMS: 4},
		&state.ScriptRun{Name: "record-after-fail", Status: state.ScriptNotRun, Reason: "an earlier script failed under STOP_SEQUENCE"},
		&state.ScriptRun{Name: "every", Status: state.ScriptNotRun, Reason: "an earlier script failed under STOP_SEQUENCE"})
	return st
}

func build(st *state.State, d *lifecycle.Document, boot string) *status.Document {
	return nodestatus.Build(nodestatus.Input{State: st, Doc: d, BootID: boot, InstanceID: "i-1", NodeID: "node-a"})
}

func scriptOf(t *testing.T, d *status.Document, stage, name string) status.Script {
	for _, s := range d.Stages {
		if s.Name == stage {
			for _, sc := range s.Scripts {
				if sc.Name == name {
					return sc
				}
			}
		}
	}
	t.Fatalf("no %s/%s", stage, name)
	return status.Script{}
}

func text(t *testing.T, d *status.Document, wide bool) string {
	var b bytes.Buffer
	require.NoError(t, nodestatus.WriteStatus(&b, d, nodestatus.TextOptions{Wide: wide, Now: t0.Add(time.Hour)}))
	return b.String()
}

// flat joins the text's lines (wrapping aside).
func flat(s string) string { return strings.Join(strings.Fields(s), " ") }

// requireFits: every line within 100 columns, none ending in a space.
func requireFits(t *testing.T, out string) {
	t.Helper()
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		require.LessOrEqual(t, len([]rune(l)), 100, "line %q", l)
		require.Equal(t, strings.TrimRight(l, " "), l, "trailing space in %q", l)
	}
}

// TestNothingRan: a node where nothing ran says so and is not 0 (exit 5).
func TestNothingRan(t *testing.T) {
	d := build(nil, nil, "boot-1")
	require.Equal(t, exitcode.NothingRan, d.ExitCode)
	require.Contains(t, d.Summary, "never ran on this instance")
	out := text(t, d, false)
	require.True(t, strings.HasSuffix(out, "exit 5: pcs-lifecycle never ran on this instance: no state and no configuration cached\n"), out)

	// Configuration cached and earlier boots ran, nothing on this one.
	st := firstBoot(t)
	d = build(st, parse(t), "boot-2")
	require.Equal(t, exitcode.NothingRan, d.ExitCode)
	require.Equal(t, "nothing has run on this boot (boot-2); the last boot that ran was boot-1, started "+
		t0.Local().Format("2006-01-02 15:04:05 MST"), d.Summary)
	require.Equal(t, status.StageNotStarted, d.Stages[0].Status)
	// Not "pending" where a run would skip it: the same decision as plan.
	require.Equal(t, status.ScriptSkipped, scriptOf(t, d, lifecycle.StageNodeBootstrapped, "record-after-fail").State)
	require.Equal(t, status.ScriptPending, scriptOf(t, d, lifecycle.StageNodeBootstrapped, "every").State)
	requireFits(t, text(t, d, false))

	// A state whose first run never got its configuration.
	st = state.New("i-1", "boot-1", t0)
	d = build(st, nil, "boot-1")
	require.Equal(t, exitcode.NothingRan, d.ExitCode)
	require.Contains(t, d.Summary, "no configuration cached")
}

// TestNeverRuns: a FIRST_BOOT_ONLY script that a STOP_SEQUENCE skipped on the first boot is
// shown as never running, on that boot and later ones.
func TestNeverRuns(t *testing.T) {
	st := firstBoot(t)
	d := build(st, parse(t), "boot-1")
	sc := scriptOf(t, d, lifecycle.StageNodeBootstrapped, "record-after-fail")
	require.Equal(t, status.ScriptNotRun, sc.State)
	require.Equal(t, "FIRST_BOOT_ONLY, and it did not run on this boot, the instance's first", sc.NeverRuns)
	require.Empty(t, scriptOf(t, d, lifecycle.StageNodeBootstrapped, "every").NeverRuns, "EVERY_BOOT runs next boot")
	require.Empty(t, scriptOf(t, d, lifecycle.StageNodeReady, "ready-check-with-a-rather-long-name").NeverRuns, "its stage has not run yet")
	require.Equal(t, exitcode.Failed, d.ExitCode)
	out := text(t, d, false)
	requireFits(t, out)
	require.Contains(t, flat(out), "never runs on this instance: FIRST_BOOT_ONLY, and it did not run on this boot")

	ran(st, "boot-2", lifecycle.StageNodeBootstrapped, 0,
		&state.ScriptRun{Name: "fail-stop-sequence", Status: state.ScriptSkipped, Reason: "FIRST_BOOT_ONLY and this is not the first boot"},
		&state.ScriptRun{Name: "record-after-fail", Status: state.ScriptSkipped, Reason: "FIRST_BOOT_ONLY and this is not the first boot"},
		&state.ScriptRun{Name: "every", Status: state.ScriptSucceeded, ExitCode: code(0), StartedAt: &t0})
	d = build(st, parse(t), "boot-2")
	sc = scriptOf(t, d, lifecycle.StageNodeBootstrapped, "record-after-fail")
	require.Equal(t, status.ScriptSkipped, sc.State)
	require.Equal(t, "FIRST_BOOT_ONLY, and on the first boot (boot-1) it was not_run: an earlier script failed under STOP_SEQUENCE", sc.NeverRuns)
	require.Empty(t, scriptOf(t, d, lifecycle.StageNodeBootstrapped, "fail-stop-sequence").NeverRuns, "it ran (and failed)")
}

// TestTerminated: after a TERMINATE every script that did not run says it never will, with
// when and by what, on this boot and later ones; a stage not run is refused (exit 4).
func TestTerminated(t *testing.T) {
	st := state.New("i-1", "boot-1", t0)
	st.ConfigSHA = "x"
	ran(st, "boot-1", lifecycle.StageNodeBootstrapped, 4,
		&state.ScriptRun{Name: "fail-stop-sequence", Status: state.ScriptFailed, ExitCode: code(7), StartedAt: &t0},
		&state.ScriptRun{Name: "record-after-fail", Status: state.ScriptNotRun, Reason: "an earlier script failed under TERMINATE"},
		&state.ScriptRun{Name: "every", Status: state.ScriptNotRun, Reason: "an earlier script failed under TERMINATE"})
	st.Terminated = &state.Termination{BootID: "boot-1", Stage: lifecycle.StageNodeBootstrapped, Script: "fail-stop-sequence", ExitCode: 7, At: t0}
	want := "the instance was marked failed at " + t0.Local().Format("2006-01-02 15:04:05 MST") + " by nodeBootstrapped/fail-stop-sequence (exit 7)"
	for _, boot := range []string{"boot-1", "boot-2"} {
		d := build(st, parse(t), boot)
		require.Equal(t, exitcode.Terminate, d.ExitCode, boot)
		require.Equal(t, want, scriptOf(t, d, lifecycle.StageNodeBootstrapped, "every").NeverRuns, boot)
		ready := scriptOf(t, d, lifecycle.StageNodeReady, "ready-check-with-a-rather-long-name")
		require.Equal(t, status.ScriptRefused, ready.State, boot)
		require.Equal(t, want, ready.NeverRuns, boot)
		require.Equal(t, status.StageRefused, d.Stages[1].Status)
		out := text(t, d, false)
		requireFits(t, out)
		require.Contains(t, flat(out), "TERMINATED: "+want)
		require.True(t, strings.HasSuffix(out, "\nexit 4: the instance must be replaced (TERMINATED above)\n"), out)
		require.Contains(t, out, "refused")
	}
}

// TestText: the status text fits 100 columns with no trailing space, durations and times for
// people, never "0ms at -"; --wide keeps one line per script.
func TestText(t *testing.T) {
	st := firstBoot(t)
	dl := &state.ScriptRun{Name: "ready-check-with-a-rather-long-name", Status: state.ScriptDownloadFailed,
		Error: "download s3://bkt/ready.sh: not found: no object s3://bkt/ready.sh (no version pinned) after 3 attempts"}
	ran(st, "boot-1", lifecycle.StageNodeReady, 3, dl)
	d := build(st, parse(t), "boot-1")
	out := text(t, d, false)
	requireFits(t, out)
	require.NotContains(t, out, "0ms at -")
	require.Contains(t, out, "download failed")
	require.Contains(t, out, "took 2.0s")
	require.Contains(t, out, "exit 1, 4ms, 09:39:43")
	require.Contains(t, flat(out), "not found: no object s3://bkt/ready.sh")

	wide := text(t, d, true)
	for _, l := range strings.Split(wide, "\n") {
		require.Equal(t, strings.TrimRight(l, " "), l)
	}
	require.Contains(t, wide, "ready-check-with-a-rather-long-name  download_failed")
	require.Less(t, strings.Count(wide, "\n"), strings.Count(out, "\n"), "reasons on the script's own line")
}

func TestDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		7 * time.Millisecond: "7ms", 1200 * time.Millisecond: "1.2s", 42 * time.Second: "42s",
		184 * time.Second: "3m04s", 2*time.Hour + 5*time.Minute: "2h05m",
	} {
		require.Equal(t, want, nodestatus.Duration(d))
	}
}
