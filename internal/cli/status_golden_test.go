package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/cache"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/paths"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/state"
	"github.com/pcs-lifecycle/pcs-lifecycle/pkg/status"
)

// The status --json document is a contract (pkg/status: fields are only ever added). The
// golden file pins it whole, every key of every type included: renaming a field, or dropping
// one from the output, fails here. UPDATE_GOLDEN=1 rewrites testdata/status.golden.json after
// a deliberate addition.

const goldenConfig = `{"scriptCachingPolicy":"CACHE_ONCE","stages":{
 "nodeBootstrapped":[
  {"name":"setup","scriptSource":{"scriptLocation":"s3://bucket/setup.sh"},"executionPolicy":"EVERY_BOOT","onError":"CONTINUE"},
  {"name":"fetch-tools","scriptSource":{"scriptLocation":"https://example.com/tools.sh"},"onError":"CONTINUE"},
  {"name":"mount","scriptSource":{"scriptLocation":"s3://bucket/mount.sh"},"onError":"TERMINATE"},
  {"name":"after","scriptSource":{"scriptLocation":"s3://bucket/after.sh"}}],
 "nodeReady":[
  {"name":"gpu-check","scriptSource":{"scriptLocation":"s3://bucket/gpu.sh"},"executionPolicy":"EVERY_BOOT"}]}}`

// goldenNode writes the state of a node whose first boot ended in a TERMINATE (a script killed
// by a signal), after a CONTINUE failure and a download failure, with an evidence upload that
// failed; an executor holds its lock.
func goldenNode(t *testing.T) *sandbox {
	s := newSandbox(t)
	layout := paths.New(s.root)
	require.NoError(t, cache.New(layout).PutConfig([]byte(goldenConfig)))
	at := func(sec int) *time.Time { v := time.Date(2026, 10, 21, 0, 49, sec, 0, time.UTC); return &v }
	code := func(c int) *int { return &c }
	st := state.New("i-0123456789abcdef0", "boot-1", *at(0))
	st.ConfigSHA = cache.Digest([]byte(goldenConfig))
	b := st.EnsureBoot("boot-1", *at(0))
	b.Stages["nodeBootstrapped"] = &state.StageRun{Status: state.StageTerminated, ExitCode: 4, StartedAt: *at(1), EndedAt: at(9), PID: 4242}
	for _, r := range []*state.ScriptRun{
		{Name: "setup", Status: state.ScriptFailed, Reason: "EVERY_BOOT", ExitCode: code(3), StartedAt: at(1), DurationMS: 1200},
		{Name: "fetch-tools", Status: state.ScriptDownloadFailed, Error: "https://example.com/tools.sh: HTTP 404 Not Found"},
		{Name: "mount", Status: state.ScriptFailed, Reason: "first boot", ExitCode: code(-1), Signal: "KILL", StartedAt: at(3), DurationMS: 5000},
		{Name: "after", Status: state.ScriptNotRun, Reason: "an earlier script failed under TERMINATE"},
	} {
		if r.StartedAt != nil {
			st.Apply(&state.Event{BootID: "boot-1", Stage: "nodeBootstrapped", Run: &state.ScriptRun{Name: r.Name, Status: state.ScriptRunning, StartedAt: r.StartedAt}})
		}
		st.Apply(&state.Event{BootID: "boot-1", Stage: "nodeBootstrapped", Run: r})
		if r.Status == state.ScriptFailed {
			st.History("nodeBootstrapped", r.Name).Digest = strings.Repeat("ab", 32)
		}
	}
	st.Terminated = &state.Termination{BootID: "boot-1", Stage: "nodeBootstrapped", Script: "mount", ExitCode: -1, Signal: "KILL", Reason: "failed", At: *at(8)}
	b.Evidence = &state.Evidence{At: *at(9), Stage: "nodeBootstrapped", OK: false, URI: "s3://evidence/pcs/i-0123456789abcdef0/boot-1.tar.gz",
		Error: "upload: AccessDenied", DurationMS: 300}
	store, err := state.Open(layout.StateFile(), layout.JournalFile())
	require.NoError(t, err)
	require.NoError(t, store.Reset(st))
	require.NoError(t, store.Close())
	lock, err := state.Acquire(context.Background(), layout.LockFile(), time.Second, "pid 4242 daemon since 2026-10-21T00:49:00Z")
	require.NoError(t, err)
	t.Cleanup(lock.Release)
	return s
}

func TestStatusJSONGolden(t *testing.T) {
	local := time.Local
	time.Local = time.UTC // messages print local times
	t.Cleanup(func() { time.Local = local })
	s := goldenNode(t)
	r := s.run(t, "status", "--json")
	require.Equal(t, 4, r.code, "%+v", r)
	got := []byte(strings.ReplaceAll(r.stdout, s.root, "$ROOT"))
	golden := filepath.Join("testdata", "status.golden.json")
	if os.Getenv("UPDATE_GOLDEN") == "1" {
		require.NoError(t, os.WriteFile(golden, got, 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err, "UPDATE_GOLDEN=1 go test ./internal/cli -run TestStatusJSONGolden writes it")
	require.Equal(t, string(want), string(got), "status --json changed; if on purpose (fields are only added), UPDATE_GOLDEN=1")

	// Every key of every type of pkg/status is in the golden document, at its place.
	var doc any
	require.NoError(t, json.NewDecoder(bytes.NewReader(want)).Decode(&doc))
	have := map[string]bool{}
	collectPaths(doc, "", have)
	var missing []string
	for _, p := range typePaths(reflect.TypeOf(status.Document{}), "") {
		if !have[p] {
			missing = append(missing, p)
		}
	}
	sort.Strings(missing)
	require.Empty(t, missing, "keys of pkg/status absent from the golden document: make the golden node show them")
}

// collectPaths records every key path of a decoded JSON value ("stages[].scripts[].name").
func collectPaths(v any, prefix string, out map[string]bool) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			out[prefix+k] = true
			collectPaths(e, prefix+k+".", out)
		}
	case []any:
		for _, e := range x {
			collectPaths(e, strings.TrimSuffix(prefix, ".")+"[].", out)
		}
	}
}

// typePaths lists the JSON key paths a type's fields can take.
func typePaths(t reflect.Type, prefix string) []string {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		if t.Kind() == reflect.Slice {
			prefix = strings.TrimSuffix(prefix, ".") + "[]."
		}
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || t == reflect.TypeOf(time.Time{}) {
		return nil
	}
	var out []string
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		out = append(out, prefix+name)
		out = append(out, typePaths(t.Field(i).Type, prefix+name+".")...)
	}
	return out
}
