package perf_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/testenv"
)

const (
	bootstrapped = "nodeBootstrapped"
	ready        = "nodeReady"
)

var nodeSeq atomic.Int64

// s3env is the environment of an executor that downloads from endpoint with the test
// server's account, and never reaches for instance metadata or an operator's AWS files.
func s3env(t testing.TB, srv *testenv.S3Server, endpoint string) []string {
	t.Helper()
	empty := filepath.Join(workDir, "aws-empty")
	if _, err := os.Stat(empty); err != nil {
		require.NoError(t, os.WriteFile(empty, nil, 0o600))
	}
	return []string{
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME=/root",
		"AWS_EC2_METADATA_DISABLED=true",
		"AWS_ENDPOINT_URL_S3=" + endpoint,
		"AWS_ACCESS_KEY_ID=" + srv.AccessKey,
		"AWS_SECRET_ACCESS_KEY=" + srv.SecretKey,
		"AWS_REGION=" + srv.Region,
		"AWS_CONFIG_FILE=" + empty,
		"AWS_SHARED_CREDENTIALS_FILE=" + empty,
	}
}

// node is a sandbox node (--root) with its own instance.
type node struct {
	root, instance, id string
	env                []string
}

func newNode(t testing.TB, env []string) *node {
	t.Helper()
	n := nodeSeq.Add(1)
	root := filepath.Join(t.TempDir(), fmt.Sprintf("node%d", n))
	require.NoError(t, os.MkdirAll(root, 0o755))
	return &node{root: root, instance: fmt.Sprintf("i-perf%06d", n), id: fmt.Sprintf("perf%d", n), env: env}
}

func (n *node) argv(sub string, args ...string) []string {
	return append([]string{binPath, sub, "--root", n.root, "--instance-id", n.instance, "--node-id", n.id}, args...)
}

func (n *node) run(t testing.TB, sub string, args ...string) proc {
	t.Helper()
	return run(t, n.env, n.argv(sub, args...)...)
}

// doc builds a configuration document: scripts are "stage/name" → location.
type scriptDef struct {
	Name            string            `json:"name"`
	ScriptSource    map[string]string `json:"scriptSource"`
	ExecutionPolicy string            `json:"executionPolicy"`
	OnError         string            `json:"onError"`
}

func writeConfig(t testing.TB, dir string, boot, rdy []string) string {
	t.Helper()
	stages := map[string][]scriptDef{}
	add := func(stage string, locs []string) {
		for i, loc := range locs {
			stages[stage] = append(stages[stage], scriptDef{Name: fmt.Sprintf("%s-%02d", stage, i),
				ScriptSource: map[string]string{"scriptLocation": loc}, ExecutionPolicy: "EVERY_BOOT", OnError: "CONTINUE"})
		}
	}
	add(bootstrapped, boot)
	add(ready, rdy)
	b, err := json.Marshal(map[string]any{"stages": stages})
	require.NoError(t, err)
	p := filepath.Join(dir, fmt.Sprintf("config-%d.json", nodeSeq.Add(1)))
	require.NoError(t, os.WriteFile(p, b, 0o644))
	return p
}

// script is a no-op shell script padded with comments to exactly size bytes (at least its
// two lines).
func script(size int) []byte {
	b := []byte("#!/bin/sh\n:\n")
	if size <= len(b) {
		return b
	}
	pad := bytes.Repeat([]byte("# padding to the size of a large lifecycle script ......................\n"), size/72+1)
	b = append(b, pad...)
	b = b[:size]
	b[size-1] = '\n'
	return b
}

// logLine is one executor.log line.
type logLine map[string]any

func (n *node) executorLog(t testing.TB) []logLine {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(n.root, "var/log/amazon/pcs/lifecycle/actions/executor.log"))
	require.NoError(t, err)
	var out []logLine
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var l logLine
		if json.Unmarshal(sc.Bytes(), &l) == nil {
			out = append(out, l)
		}
	}
	return out
}

// lastNum is field key of the last executor.log line whose message is msg.
func (n *node) lastNum(t testing.TB, msg, key string) (float64, bool) {
	t.Helper()
	lines := n.executorLog(t)
	for i := len(lines) - 1; i >= 0; i-- {
		if lines[i]["message"] == msg {
			v, ok := lines[i][key].(float64)
			return v, ok
		}
	}
	return 0, false
}

// count is how many executor.log lines have message msg.
func (n *node) count(t testing.TB, msg string) int {
	t.Helper()
	c := 0
	for _, l := range n.executorLog(t) {
		if l["message"] == msg {
			c++
		}
	}
	return c
}

// scriptEnds is how many scripts of stage logged an end line with exit=0 in their logs.
func (n *node) scriptEnds(t testing.TB, stage string) int {
	t.Helper()
	dir := filepath.Join(n.root, "var/log/amazon/pcs/lifecycle/actions", stage)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	c := 0
	for _, e := range ents {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		c += strings.Count(string(data), " exit=0 @ ")
	}
	return c
}
