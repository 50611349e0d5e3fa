package e2e_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/testenv"
	"github.com/pcs-lifecycle/pcs-lifecycle/pkg/status"
)

// Stage names.
const (
	bootstrapped = "nodeBootstrapped"
	ready        = "nodeReady"
)

// Identity every node runs with (the instance and boot ids are per node).
const (
	clusterID   = "pcs_e2ecluster01"
	clusterName = "e2e-cluster"
	cngID       = "pcs_e2ecng00001"
	cngName     = "e2e-static"
)

// runTimeout bounds one synchronous command; no case here should come near it.
const runTimeout = 90 * time.Second

// ---------------------------------------------------------------------------------------------
// The configuration document, as a user writes it.

type doc struct {
	ScriptCachingPolicy string                 `json:"scriptCachingPolicy,omitempty"`
	Stages              map[string][]scriptDef `json:"stages"`
}

type scriptDef struct {
	Name            string    `json:"name"`
	ScriptSource    sourceDef `json:"scriptSource"`
	Arguments       []string  `json:"arguments,omitempty"`
	ExecutionPolicy string    `json:"executionPolicy,omitempty"`
	OnError         string    `json:"onError,omitempty"`
}

type sourceDef struct {
	ScriptLocation string `json:"scriptLocation"`
	Checksum       string `json:"checksum,omitempty"`
	S3VersionID    string `json:"s3VersionId,omitempty"`
}

func script(name, location string) scriptDef {
	return scriptDef{Name: name, ScriptSource: sourceDef{ScriptLocation: location}}
}

func (s scriptDef) every() scriptDef         { s.ExecutionPolicy = "EVERY_BOOT"; return s }
func (s scriptDef) firstOnly() scriptDef     { s.ExecutionPolicy = "FIRST_BOOT_ONLY"; return s }
func (s scriptDef) onErr(o string) scriptDef { s.OnError = o; return s }
func (s scriptDef) args(a ...string) scriptDef {
	s.Arguments = a
	return s
}
func (s scriptDef) checksum(c string) scriptDef { s.ScriptSource.Checksum = c; return s }

func stages(boot []scriptDef, rdy []scriptDef) doc {
	d := doc{Stages: map[string][]scriptDef{}}
	if len(boot) > 0 {
		d.Stages[bootstrapped] = boot
	}
	if len(rdy) > 0 {
		d.Stages[ready] = rdy
	}
	return d
}

func (d doc) caching(p string) doc { d.ScriptCachingPolicy = p; return d }

func (d doc) json(t testing.TB) []byte {
	t.Helper()
	b, err := json.MarshalIndent(d, "", "  ")
	require.NoError(t, err)
	return b
}

// ---------------------------------------------------------------------------------------------
// Script sources: the shared versitygw and per-test HTTPS servers.

// s3Bucket is a bucket of its own on the shared versitygw.
type s3Bucket struct {
	srv  *testenv.S3Server
	name string
}

func newBucket(t testing.TB) *s3Bucket {
	t.Helper()
	srv := testenv.SharedS3(t)
	return &s3Bucket{srv: srv, name: srv.NewBucket(t)}
}

// put stores data at key and returns its s3:// location.
func (b *s3Bucket) put(t testing.TB, key string, data []byte) string {
	t.Helper()
	b.srv.Put(t, b.name, key, data)
	return "s3://" + b.name + "/" + key
}

// remove deletes key through the posix backend (versitygw serves the folder as the bucket).
func (b *s3Bucket) remove(t testing.TB, key string) {
	t.Helper()
	require.NoError(t, os.Remove(filepath.Join(b.srv.Dir, b.name, key)))
}

// webFile is what the HTTPS server does for one path.
type webFile struct {
	data      []byte
	status    int           // answer this status instead of data (0: 200 with data)
	delay     time.Duration // wait before answering
	failFirst int           // answer 503 to this many requests first
	// together: answer only once this many requests of together-files are in flight at once
	// (a barrier; after 30 s without it, answer 503): proof that the downloads overlap.
	together int
}

// web is an HTTPS server (its own CA) serving webFiles and counting requests per path.
type web struct {
	*testenv.TLSServer
	mu     sync.Mutex
	files  map[string]*webFile
	counts map[string]int
	total  atomic.Int64
	// the barrier of together-files: requests waiting, and closed when enough wait at once
	waiting int
	met     chan struct{}
}

func newWeb(t testing.TB) *web {
	t.Helper()
	w := &web{files: map[string]*webFile{}, counts: map[string]int{}, met: make(chan struct{})}
	w.TLSServer = testenv.StartTLS(t, w)
	return w
}

func (w *web) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	w.total.Add(1)
	w.mu.Lock()
	w.counts[r.URL.Path]++
	n := w.counts[r.URL.Path]
	f := w.files[r.URL.Path]
	var cp webFile
	if f != nil {
		cp = *f
	}
	w.mu.Unlock()
	if f == nil {
		http.NotFound(rw, r)
		return
	}
	if cp.together > 0 && !w.meet(r, cp.together) {
		http.Error(rw, "the downloads did not overlap", http.StatusServiceUnavailable)
		return
	}
	if cp.delay > 0 {
		select {
		case <-time.After(cp.delay):
		case <-r.Context().Done():
			return
		}
	}
	switch {
	case n <= cp.failFirst:
		http.Error(rw, "try again later", http.StatusServiceUnavailable)
	case cp.status != 0:
		http.Error(rw, http.StatusText(cp.status), cp.status)
	default:
		rw.Header().Set("Content-Length", strconv.Itoa(len(cp.data)))
		_, _ = rw.Write(cp.data)
	}
}

// meet waits until n together-requests are in flight at once (true), or 30 s (false).
func (w *web) meet(r *http.Request, n int) bool {
	w.mu.Lock()
	w.waiting++
	if w.waiting == n {
		close(w.met)
	}
	w.mu.Unlock()
	select {
	case <-w.met:
		return true
	case <-r.Context().Done():
		return false
	case <-time.After(30 * time.Second):
		return false
	}
}

// serve sets what path answers and returns its https:// location.
func (w *web) serve(path string, f webFile) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.files[path] = &f
	return w.URL + path
}

// put serves data at path.
func (w *web) put(path string, data []byte) string { return w.serve(path, webFile{data: data}) }

// requests is how many requests reached path.
func (w *web) requests(path string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.counts[path]
}

// ---------------------------------------------------------------------------------------------
// Sandbox nodes.

var nodeSeq atomic.Int64

// node is one sandbox compute node: a --root, an instance id and a boot counter.
type node struct {
	t        testing.TB
	root     string
	name     string
	instance string
	boot     int
	env      map[string]string // extra or overriding environment of the executor
}

type nodeOpt func(*node)

// withCA trusts the CA of an HTTPS test server (SSL_CERT_FILE).
func withCA(w *web) nodeOpt { return func(n *node) { n.env["SSL_CERT_FILE"] = w.CAFile } }

// withEnv adds a variable to the executor's environment.
func withEnv(k, v string) nodeOpt { return func(n *node) { n.env[k] = v } }

func newNode(t testing.TB, opts ...nodeOpt) *node {
	t.Helper()
	s := nodeSeq.Add(1)
	name := fmt.Sprintf("node%03d", s)
	n := &node{
		t:        t,
		root:     filepath.Join(t.TempDir(), "root"),
		name:     name,
		instance: fmt.Sprintf("i-0e2e%012d", s),
		boot:     1,
		env:      map[string]string{},
	}
	require.NoError(t, os.MkdirAll(n.root, 0o755))
	for _, o := range opts {
		o(n)
	}
	return n
}

// with returns the same node for use in subtest t (assertions must fail the subtest).
func (n *node) with(t testing.TB) *node {
	c := *n
	c.t = t
	return &c
}

func (n *node) bootID() string { return fmt.Sprintf("boot-%s-%d", n.instance, n.boot) }

// reboot moves the node to its next boot.
func (n *node) reboot() { n.boot++ }

// newInstance turns the node into a new instance (an image made from a used node).
func (n *node) newInstance() {
	s := nodeSeq.Add(1)
	n.instance = fmt.Sprintf("i-0e2e%012d", s)
	n.boot = 1
}

// environ is the executor's whole environment: explicit, nothing inherited but PATH.
func (n *node) environ() []string {
	env := map[string]string{
		"PATH":                           os.Getenv("PATH"),
		"AWS_EC2_METADATA_DISABLED":      "true",
		"AWS_CONFIG_FILE":                awsEmpty,
		"AWS_SHARED_CREDENTIALS_FILE":    awsEmpty,
		"PCS_LIFECYCLE_DOWNLOAD_BACKOFF": "50ms",
		"GORACE":                         "halt_on_error=1 exitcode=66",
	}
	if srv := testenv.SharedS3(n.t); srv != nil {
		env["AWS_ENDPOINT_URL_S3"] = srv.Endpoint
		env["AWS_ACCESS_KEY_ID"] = srv.AccessKey
		env["AWS_SECRET_ACCESS_KEY"] = srv.SecretKey
		env["AWS_REGION"] = srv.Region
	}
	for k, v := range n.env {
		if v == "" {
			delete(env, k)
			continue
		}
		env[k] = v
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// argv is the command line of sub on this node, identity flags included.
func (n *node) argv(sub string, args ...string) []string {
	a := []string{sub, "--root", n.root,
		"--node-id", n.name, "--cluster-id", clusterID, "--cluster-name", clusterName,
		"--compute-node-group-id", cngID, "--compute-node-group-name", cngName,
		"--instance-id", n.instance, "--boot-id", n.bootID()}
	return append(a, args...)
}

type result struct {
	code           int
	stdout, stderr string
	dur            time.Duration
}

func (r result) String() string {
	return fmt.Sprintf("exit %d after %s\n--- stdout\n%s--- stderr\n%s", r.code, r.dur.Round(time.Millisecond), r.stdout, r.stderr)
}

// run runs the binary on this node and waits for it.
func (n *node) run(sub string, args ...string) result {
	n.t.Helper()
	return n.runArgv(n.argv(sub, args...))
}

// runArgv runs the binary with exactly argv (no node flags added) in the node's environment.
func (n *node) runArgv(argv []string) result {
	n.t.Helper()
	return n.runPath(binPath, argv)
}

// runShell runs /bin/sh with argv (which execs the binary) in the node's environment.
func (n *node) runShell(argv []string) result {
	n.t.Helper()
	return n.runPath("/bin/sh", argv)
}

func (n *node) runPath(path string, argv []string) result {
	n.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, argv...)
	cmd.Env = n.environ()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String(), dur: time.Since(start)}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee) && ee.ExitCode() >= 0:
		r.code = ee.ExitCode()
	default:
		require.FailNow(n.t, "pcs-lifecycle did not exit normally", "%v: %v\n%s", argv, err, r)
	}
	requireNoRace(n.t, r)
	return r
}

// awaitLockWait waits until an executor of this node says it waits for another's lock.
func (n *node) awaitLockWait(t testing.TB) {
	t.Helper()
	eventually(t, 30*time.Second, "an executor to wait for the lock", func() bool {
		return fileHas(filepath.Join(n.logDir(), "executor.log"), "waiting for another executor's lock")
	})
}

// requireNoRace fails the test when the executor (built with -race) reported a data race.
func requireNoRace(t testing.TB, r result) {
	t.Helper()
	if strings.Contains(r.stderr, "WARNING: DATA RACE") {
		require.FailNow(t, "the executor has a data race", "%s", r)
	}
}

// requireRun runs and requires the exit code.
func (n *node) requireRun(code int, sub string, args ...string) result {
	n.t.Helper()
	r := n.run(sub, args...)
	require.Equal(n.t, code, r.code, "%s %v:\n%s", sub, args, r)
	return r
}

// running is an executor started in the background.
type running struct {
	cmd    *exec.Cmd
	stdout bytes.Buffer
	stderr bytes.Buffer
	done   chan struct{}
	res    result
	start  time.Time
}

// start starts the binary in the background; it is killed at the end of the test if still
// running.
func (n *node) start(sub string, args ...string) *running {
	n.t.Helper()
	cmd := exec.Command(binPath, n.argv(sub, args...)...)
	cmd.Env = n.environ()
	p := &running{cmd: cmd, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = &p.stdout, &p.stderr
	p.start = time.Now()
	require.NoError(n.t, cmd.Start())
	go func() {
		err := cmd.Wait()
		p.res = result{stdout: p.stdout.String(), stderr: p.stderr.String(), dur: time.Since(p.start)}
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			p.res.code = ee.ExitCode()
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				p.res.code = 128 + int(ws.Signal())
			}
		}
		close(p.done)
	}()
	n.t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

func (p *running) pid() int { return p.cmd.Process.Pid }

// wait waits for the background executor to exit.
func (p *running) wait(t testing.TB, within time.Duration) result {
	t.Helper()
	select {
	case <-p.done:
		requireNoRace(t, p.res)
		return p.res
	case <-time.After(within):
		require.FailNow(t, "executor still running", "pid %d after %s", p.pid(), within)
	}
	return result{}
}

func (p *running) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// ---------------------------------------------------------------------------------------------
// Files of a node.

func (n *node) path(rel string) string { return filepath.Join(n.root, rel) }

func (n *node) logDir() string { return n.path("var/log/amazon/pcs/lifecycle/actions") }

func (n *node) cacheDir() string { return n.path("etc/amazon/pcs/lifecycle/actions/config") }

func (n *node) scriptsDir() string { return filepath.Join(n.cacheDir(), "scripts") }

func (n *node) cachedConfig() string {
	return filepath.Join(n.cacheDir(), "node-lifecycle-actions.json")
}

func (n *node) scriptLogPath(stage, name string) string {
	return filepath.Join(n.logDir(), stage, name+".log")
}

// scriptLog is the per-script log ("" when it does not exist).
func (n *node) scriptLog(stage, name string) string {
	b, err := os.ReadFile(n.scriptLogPath(stage, name))
	if errors.Is(err, os.ErrNotExist) {
		return ""
	}
	require.NoError(n.t, err)
	return string(b)
}

// writeConfig writes d as a file and returns its path.
func (n *node) writeConfig(d doc) string {
	n.t.Helper()
	return n.writeFile(fmt.Sprintf("config-%d.json", time.Now().UnixNano()), d.json(n.t))
}

// writeFile writes a file outside the node's root and returns its path.
func (n *node) writeFile(name string, data []byte) string {
	n.t.Helper()
	p := filepath.Join(filepath.Dir(n.root), name)
	require.NoError(n.t, os.WriteFile(p, data, 0o644))
	return p
}

// scriptRun is one run framed in a per-script log.
type scriptRun struct {
	start  string // the [start …] line
	args   string // the JSON array of args= in the start line
	output string // everything between the frame lines
	end    string // the [end …] line ("" when the run has no end yet)
	exit   string // what follows "exit=" in the end line
}

var (
	startRe = regexp.MustCompile(`^\[start (.+) args=(\[.*\]) @ (\d{10})\]$`)
	endRe   = regexp.MustCompile(`^\[end (.+) exit=(-?\d+|signal:[A-Z0-9]+) @ (\d{10})\]$`)
)

// runs parses a per-script log of the script name into its runs, requiring the framing of
// SPEC §6 on every run.
func runs(t testing.TB, log, name string) []scriptRun {
	t.Helper()
	var out []scriptRun
	var cur *scriptRun
	var body strings.Builder
	sc := bufio.NewScanner(strings.NewReader(log))
	sc.Buffer(make([]byte, 64<<10), 32<<20)
	for sc.Scan() {
		line := sc.Text()
		if m := startRe.FindStringSubmatch(line); m != nil && m[1] == name {
			if cur != nil {
				cur.output = body.String()
				out = append(out, *cur)
			}
			cur = &scriptRun{start: line, args: m[2]}
			body.Reset()
			continue
		}
		if m := endRe.FindStringSubmatch(line); m != nil && m[1] == name && cur != nil {
			cur.end, cur.exit, cur.output = line, m[2], body.String()
			out = append(out, *cur)
			cur = nil
			body.Reset()
			continue
		}
		require.NotNil(t, cur, "per-script log line outside a [start]…[end] frame: %q\n%s", line, log)
		body.WriteString(line)
		body.WriteByte('\n')
	}
	if cur != nil {
		cur.output = body.String()
		out = append(out, *cur)
	}
	return out
}

// nodeRuns is the runs of one script on this node.
func (n *node) runs(stage, name string) []scriptRun {
	n.t.Helper()
	return runs(n.t, n.scriptLog(stage, name), name)
}

// logLine is one executor.log line, parsed.
type logLine map[string]any

func (l logLine) str(k string) string {
	v, _ := l[k].(string)
	return v
}

func (l logLine) num(k string) (float64, bool) {
	v, ok := l[k].(float64)
	return v, ok
}

var (
	lineHeadRe = regexp.MustCompile(`^\{"timestamp":"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z)","level":"(DEBUG|INFO|WARN|ERROR)","message":"`)
)

// executorLog parses executor.log, requiring every line to be the JSON object of SPEC §6:
// timestamp (UTC, RFC 3339, microseconds), level, message first, in that order.
func (n *node) executorLog() []logLine {
	n.t.Helper()
	data, err := os.ReadFile(filepath.Join(n.logDir(), "executor.log"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	require.NoError(n.t, err)
	var out []logLine
	for i, raw := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
		if raw == "" {
			continue
		}
		m := lineHeadRe.FindStringSubmatch(raw)
		require.NotNil(n.t, m, "executor.log line %d does not start with timestamp, level, message: %s", i+1, raw)
		_, err := time.Parse(time.RFC3339Nano, m[1])
		require.NoError(n.t, err, "executor.log line %d timestamp", i+1)
		var l logLine
		require.NoError(n.t, json.Unmarshal([]byte(raw), &l), "executor.log line %d is not JSON: %s", i+1, raw)
		out = append(out, l)
	}
	return out
}

// find returns the executor.log lines matching every key=value given (value "*" means the key
// is present; a key "message~" matches a substring of the message).
func (n *node) find(kv ...string) []logLine {
	n.t.Helper()
	require.True(n.t, len(kv)%2 == 0)
	var out []logLine
	for _, l := range n.executorLog() {
		if matches(l, kv) {
			out = append(out, l)
		}
	}
	return out
}

func matches(l logLine, kv []string) bool {
	for i := 0; i < len(kv); i += 2 {
		k, want := kv[i], kv[i+1]
		switch {
		case strings.HasSuffix(k, "~"):
			if !strings.Contains(strings.ToLower(l.str(strings.TrimSuffix(k, "~"))), strings.ToLower(want)) {
				return false
			}
		case want == "*":
			if _, ok := l[k]; !ok {
				return false
			}
		default:
			v, ok := l[k]
			if !ok || fmt.Sprint(v) != want {
				return false
			}
		}
	}
	return true
}

// requireLog requires at least one executor.log line matching kv and returns the first.
func (n *node) requireLog(kv ...string) logLine {
	n.t.Helper()
	got := n.find(kv...)
	if len(got) == 0 {
		var all strings.Builder
		for _, l := range n.executorLog() {
			b, _ := json.Marshal(l)
			all.Write(b)
			all.WriteByte('\n')
		}
		require.FailNow(n.t, "no executor.log line matches", "%v\nexecutor.log:\n%s", kv, all.String())
	}
	return got[0]
}

// status runs status --json and parses it.
func (n *node) status() (*status.Document, int) {
	n.t.Helper()
	r := n.run("status", "--json")
	var d status.Document
	require.NoError(n.t, json.Unmarshal([]byte(r.stdout), &d), "status --json:\n%s", r)
	return &d, r.code
}

func stageOf(t testing.TB, d *status.Document, name string) status.Stage {
	t.Helper()
	for _, s := range d.Stages {
		if s.Name == name {
			return s
		}
	}
	require.FailNow(t, "stage not in status", "%s: %+v", name, d.Stages)
	return status.Stage{}
}

func scriptOf(t testing.TB, d *status.Document, stage, name string) status.Script {
	t.Helper()
	for _, s := range stageOf(t, d, stage).Scripts {
		if s.Name == name {
			return s
		}
	}
	require.FailNow(t, "script not in status", "%s/%s", stage, name)
	return status.Script{}
}

// eventually polls cond every 20 ms until it holds or within passes.
func eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			require.FailNow(t, "timed out waiting", "%s (after %s)", what, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// groupAlive reports whether any live (not zombie) process is in process group pgid.
func groupAlive(pgid int) bool {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return false
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp …; comm may hold spaces and parentheses.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 3 {
			continue
		}
		if f[0] == "Z" || f[0] == "X" {
			continue
		}
		if g, _ := strconv.Atoi(f[2]); g == pgid && pid > 0 {
			return true
		}
	}
	return false
}

// killGroup SIGKILLs a process group (a test's cleanup of what it left running).
func killGroup(pgid int) { _ = syscall.Kill(-pgid, syscall.SIGKILL) }

// valueAfter returns the value of "key=" on its own line of out ("" when absent).
func valueAfter(out, key string) string {
	for _, l := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(l, key+"="); ok {
			return v
		}
	}
	return ""
}

// sh is a #!/bin/sh script with body.
func sh(body string) []byte { return []byte("#!/bin/sh\n" + body + "\n") }

// okScript prints msg and succeeds.
func okScript(msg string) []byte { return sh("echo " + shellQuote(msg)) }

// failScript prints to stderr and exits code.
func failScript(code int) []byte {
	return sh(fmt.Sprintf("echo 'intentional failure' >&2\nexit %d", code))
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// modeOf is the permission bits of p.
func modeOf(t testing.TB, p string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(p)
	require.NoError(t, err)
	return fi.Mode().Perm()
}

// startWaiting starts `run --stage nodeBootstrapped args...` in the background and returns
// once its script name (a waitScript) is waiting, with the script's process group, which the
// test's cleanup kills.
func (n *node) startWaiting(t testing.TB, name string, args ...string) (*running, int) {
	t.Helper()
	p := n.start("run", append([]string{"--stage", bootstrapped}, args...)...)
	eventually(t, 20*time.Second, name+" to start", func() bool {
		return strings.Contains(n.scriptLog(bootstrapped, name), "waiting\n")
	})
	pg := n.pgidIn(bootstrapped, name)
	require.NotZero(t, pg)
	t.Cleanup(func() { killGroup(pg) })
	return p, pg
}

// powerCut kills the executor and its script's group outright, as a power loss would, and
// returns how the executor ended.
func (p *running) powerCut(t testing.TB, pg int) result {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL))
	killGroup(pg)
	r := p.wait(t, 10*time.Second)
	eventually(t, 5*time.Second, "the script's group to be gone", func() bool { return !groupAlive(pg) })
	return r
}
