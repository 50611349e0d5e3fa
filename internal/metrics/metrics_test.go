package metrics_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/metrics"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/metrics/metricstest"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/state"
	"github.com/pcs-lifecycle/pcs-lifecycle/pkg/status"
)

func ip(i int) *int             { return &i }
func i64(i int64) *int64        { return &i }
func tp(t time.Time) *time.Time { return &t }

// A node whose nodeBootstrapped ended in TERMINATE on its first boot, with an evidence upload
// that failed: every metric the issue asks for is there, parses, lints clean and has the value
// of the state.
func fixture() metrics.Input {
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	st := state.New("i-0abc", "b1", t0)
	b := st.EnsureBoot("b1", t0)
	b.AddMark(state.Mark{Kind: state.MarkRegistrationWait, Stage: "nodeReady", At: t0, DurationMS: 2500, Detail: "registered"})
	b.Evidence = &state.Evidence{At: t0.Add(5 * time.Second), Stage: "nodeBootstrapped", OK: false, Error: "timeout", DurationMS: 1200}
	st.Terminated = &state.Termination{BootID: "b1", Stage: "nodeBootstrapped", Script: "mount fs", ExitCode: 7, At: t0.Add(4 * time.Second)}
	st.History("nodeBootstrapped", "setup").Runs = 3
	h := st.History("nodeBootstrapped", "mount fs")
	h.Runs, h.Failures = 2, 2
	doc := &status.Document{Version: status.Version, ExitCode: 4,
		Node:       status.Node{InstanceID: "i-0abc", BootID: "b1", FirstBoot: true},
		Terminated: &status.Termination{Stage: "nodeBootstrapped", Script: "mount fs", ExitCode: 7, BootID: "b1", At: t0.Add(4 * time.Second)},
		Stages: []status.Stage{
			{Name: "nodeBootstrapped", Status: "terminated", ExitCode: ip(4), StartedAt: tp(t0), DurationMS: i64(4000), Scripts: []status.Script{
				{Name: "setup", ThisBoot: "succeeded", ExitCode: ip(0), DurationMS: i64(1500), StartedAt: tp(t0), Runs: 3},
				{Name: "mount fs", ThisBoot: "failed", ExitCode: ip(7), DurationMS: i64(2250), StartedAt: tp(t0.Add(2 * time.Second)), Runs: 2},
				{Name: "never", ThisBoot: "not_run"},
			}},
			{Name: "nodeReady", Status: "not_started", Scripts: []status.Script{{Name: "join", ThisBoot: "pending"}}},
		}}
	return metrics.Input{Status: doc, State: st}
}

func TestFamiliesParseLintAndValues(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, metrics.Write(&buf, metrics.Families(fixture())))
	fams := metricstest.Parse(t, buf.Bytes())
	for name := range fams {
		require.Regexp(t, `^pcs_lifecycle_[a-z_]+$`, name)
	}
	want := []struct {
		name   string
		labels []string
		value  float64
	}{
		{"pcs_lifecycle_exit_code", nil, 4},
		{"pcs_lifecycle_first_boot", nil, 1},
		{"pcs_lifecycle_instance_failed", nil, 1},
		{"pcs_lifecycle_instance_failed_timestamp_seconds", []string{"script", "mount fs"}, float64(time.Date(2026, 11, 30, 10, 0, 4, 0, time.UTC).Unix())},
		{"pcs_lifecycle_stage_status", []string{"stage", "nodeBootstrapped", "status", "terminated"}, 1},
		{"pcs_lifecycle_stage_status", []string{"stage", "nodeReady", "status", "not_started"}, 1},
		{"pcs_lifecycle_stage_exit_code", []string{"stage", "nodeBootstrapped"}, 4},
		{"pcs_lifecycle_stage_duration_seconds", []string{"stage", "nodeBootstrapped"}, 4},
		{"pcs_lifecycle_stage_registration_wait_seconds", []string{"stage", "nodeReady"}, 2.5},
		{"pcs_lifecycle_script_last_exit_code", []string{"script", "mount fs"}, 7},
		{"pcs_lifecycle_script_last_duration_seconds", []string{"script", "mount fs"}, 2.25},
		{"pcs_lifecycle_script_runs_total", []string{"script", "setup"}, 3},
		{"pcs_lifecycle_script_failures_total", []string{"script", "mount fs"}, 2},
		{"pcs_lifecycle_script_failures_total", []string{"script", "setup"}, 0},
		{"pcs_lifecycle_script_runs_total", []string{"stage", "nodeReady", "script", "join"}, 0},
		{"pcs_lifecycle_script_state", []string{"script", "never", "state", "not_run"}, 1},
		{"pcs_lifecycle_evidence_upload_success", nil, 0},
		{"pcs_lifecycle_evidence_upload_duration_seconds", nil, 1.2},
	}
	for _, w := range want {
		v, ok := metricstest.Value(t, fams, w.name, w.labels...)
		require.True(t, ok, "%s%v missing", w.name, w.labels)
		require.Equal(t, w.value, v, "%s%v", w.name, w.labels)
	}
	_, ok := metricstest.Value(t, fams, "pcs_lifecycle_script_last_exit_code", "script", "never")
	require.False(t, ok, "a script that never ran has no exit code")

	require.Equal(t, "COUNTER", fams["pcs_lifecycle_script_failures_total"].GetType().String())
}

// Nothing ran: the file still parses and says so (no samples of a stage).
func TestFamiliesEmpty(t *testing.T) {
	var buf bytes.Buffer
	doc := &status.Document{Node: status.Node{InstanceID: "i-1", BootID: "b", FirstBoot: true}, Stages: []status.Stage{}}
	require.NoError(t, metrics.Write(&buf, metrics.Families(metrics.Input{Status: doc})))
	fams := metricstest.Parse(t, buf.Bytes())
	v, ok := metricstest.Value(t, fams, "pcs_lifecycle_first_boot")
	require.True(t, ok)
	require.Equal(t, 1.0, v)
	require.NotContains(t, fams, "pcs_lifecycle_stage_status")
}

// WriteFile replaces the file atomically, readable by node_exporter, leaving no temp file
// that the collector (which reads *.prom) could see.
func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "pcs_lifecycle.prom")
	require.NoError(t, os.WriteFile(path, []byte("old"), 0o600))
	require.NoError(t, metrics.WriteFile(path, metrics.Families(fixture())))
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	metricstest.Parse(t, data)
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, metrics.FileMode, fi.Mode().Perm())
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, ents, 1)
	// A directory that does not exist is an error naming the file.
	err = metrics.WriteFile(filepath.Join(dir, "missing", "x.prom"), nil)
	require.ErrorContains(t, err, filepath.Join(dir, "missing", "x.prom"))
}
