package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/testenv"
	"github.com/pcs-lifecycle/pcs-lifecycle/pkg/status"
)

// The commands run in this process through Execute, with their own writers: nothing may reach
// os.Stdout or os.Stderr (a test that wrote there would show it in `go test -v` only; the
// writers given are checked to hold every line).

type result struct {
	code           int
	stdout, stderr string
}

func execute(t *testing.T, args ...string) result {
	t.Helper()
	var out, errw bytes.Buffer
	code := Execute(context.Background(), args, &out, &errw)
	return result{code: code, stdout: out.String(), stderr: errw.String()}
}

// sandbox is a --root node with its identity flags.
type sandbox struct {
	root string
	args []string
}

func newSandbox(t *testing.T) *sandbox {
	root := t.TempDir()
	return &sandbox{root: root, args: []string{"--root", root, "--node-id", "compute-1", "--instance-id", "i-0123456789abcdef0",
		"--boot-id", "boot-1", "--download-backoff", "10ms", "--lock-timeout", "5s"}}
}

func (s *sandbox) run(t *testing.T, args ...string) result {
	t.Helper()
	return execute(t, append(args, s.args...)...)
}

func writeFile(t *testing.T, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, data, 0o600))
	return p
}

func TestVersionWritesToItsWriter(t *testing.T) {
	r := execute(t, "version")
	require.Equal(t, 0, r.code)
	require.True(t, strings.HasPrefix(r.stdout, "pcs-lifecycle "+Version+" (commit "+Commit), r.stdout)
	require.Empty(t, r.stderr)
}

func TestUsageErrorsExit2OnStderr(t *testing.T) {
	for name, args := range map[string][]string{
		"unknown command":     {"frobnicate"},
		"unknown flag":        {"status", "--no-such-flag"},
		"bad stage":           {"run", "--stage", "nodeDone"},
		"bad on-terminate":    {"run", "--stage", "nodeReady", "--on-terminate", "reboot-please"},
		"negative timeout":    {"run", "--stage", "nodeReady", "--registration-timeout", "-1s"},
		"zero attempts":       {"fetch", "--download-attempts", "0"},
		"validate needs file": {"validate"},
	} {
		t.Run(name, func(t *testing.T) {
			r := execute(t, args...)
			require.Equal(t, 2, r.code, "%+v", r)
			require.Empty(t, r.stdout)
			require.True(t, strings.HasPrefix(r.stderr, "pcs-lifecycle: "), r.stderr)
		})
	}
}

func TestEnvironmentFallbacks(t *testing.T) {
	t.Setenv("PCS_LIFECYCLE_DOWNLOAD_ATTEMPTS", "many")
	r := execute(t, "fetch")
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, `PCS_LIFECYCLE_DOWNLOAD_ATTEMPTS="many"`, "the variable is named")

	// A flag given wins over its variable.
	t.Setenv("PCS_LIFECYCLE_DOWNLOAD_ATTEMPTS", "0")
	s := newSandbox(t)
	r = s.run(t, "run", "--stage", "nodeBootstrapped", "--download-attempts", "2")
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "no configuration", "--download-attempts 2 was taken, not the variable's 0")
}

func TestFirstRunNeedsAConfiguration(t *testing.T) {
	s := newSandbox(t)
	r := s.run(t, "run", "--stage", "nodeBootstrapped")
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "no configuration: this is the first run on instance i-0123456789abcdef0")
	require.FileExists(t, filepath.Join(s.root, "var/log/amazon/pcs/lifecycle/actions/executor.log"))
}

func TestInvalidConfigurationListsItsProblems(t *testing.T) {
	s := newSandbox(t)
	cfg := writeFile(t, "bad.json", []byte(`{"stages":{"nodeReady":[{"name":"x","scriptSource":{"scriptLocation":"http://example.com/a.sh"}}]}}`))
	r := s.run(t, "run", "--stage", "nodeReady", "--config", cfg)
	require.Equal(t, 2, r.code, "%+v", r)
	require.Contains(t, r.stderr, "invalid configuration:")
	require.Contains(t, r.stderr, "stages.nodeReady[0].scriptSource.scriptLocation")
}

// TestRunThenStatus: a stage against a real S3 server (versitygw), then status --json and
// wait, all in this process.
func TestRunThenStatus(t *testing.T) {
	srv := testenv.StartS3(t)
	srv.Env(t)
	bucket := srv.NewBucket(t)
	srv.Put(t, bucket, "ok.sh", []byte("#!/bin/sh\necho hello \"$PCS_NODE_ID\"\n"))
	srv.Put(t, bucket, "bad.sh", []byte("#!/bin/sh\nexit 7\n"))
	doc := `{"stages":{"nodeBootstrapped":[
		{"name":"hello","scriptSource":{"scriptLocation":"` + locOf(bucket, "ok.sh") + `"},"executionPolicy":"EVERY_BOOT"},
		{"name":"bad","scriptSource":{"scriptLocation":"` + locOf(bucket, "bad.sh") + `"},"onError":"CONTINUE"}]}}`
	s := newSandbox(t)
	cfg := writeFile(t, "cfg.json", []byte(doc))

	r := s.run(t, "run", "--stage", "nodeBootstrapped", "--config", cfg)
	require.Equal(t, 3, r.code, "%+v", r)
	require.Empty(t, r.stdout, "run prints nothing on stdout")
	require.Contains(t, r.stderr, "pcs-lifecycle: nodeBootstrapped/bad failed (exit=7) onError=CONTINUE")
	require.Contains(t, r.stderr, "pcs-lifecycle: exit 3 for stage nodeBootstrapped")
	logText, err := os.ReadFile(filepath.Join(s.root, "var/log/amazon/pcs/lifecycle/actions/nodeBootstrapped/hello.log"))
	require.NoError(t, err)
	require.Contains(t, string(logText), "hello compute-1\n")

	r = s.run(t, "run", "--stage", "nodeBootstrapped")
	require.Equal(t, 3, r.code, "the recorded result of the stage")
	require.Contains(t, r.stderr, "already ran this boot")

	r = s.run(t, "status", "--json")
	require.Equal(t, 3, r.code, "%+v", r)
	var d status.Document
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &d), r.stdout)
	require.Equal(t, "i-0123456789abcdef0", d.Node.InstanceID)
	require.Len(t, d.Stages, 1)
	require.Equal(t, "failed", d.Stages[0].Status)

	r = s.run(t, "wait", "--stage", "nodeBootstrapped", "--timeout", "5s")
	require.Equal(t, 3, r.code, "%+v", r)
}

func locOf(bucket, key string) string { return "s3://" + bucket + "/" + key }
