package reliability

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/paths"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/testenv"
	"github.com/pcs-lifecycle/pcs-lifecycle/pkg/lifecycle"
	"github.com/pcs-lifecycle/pcs-lifecycle/pkg/status"
)

var fullFlag = flag.Bool("reliability.full", false, "run the long loops with their full count (also PCS_RELIABILITY_FULL=1)")

// full reports whether the long loops run their full count.
func full() bool { return *fullFlag || os.Getenv("PCS_RELIABILITY_FULL") == "1" }

// count is n by default and fullN under PCS_RELIABILITY_FULL=1.
func count(n, fullN int) int {
	if full() {
		return fullN
	}
	return n
}

// exe is the executor under test.
var exe string

func TestMain(m *testing.M) {
	flag.Parse()
	// Nothing in this process or its children may reach the real instance metadata service.
	os.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	os.Unsetenv("AWS_EC2_METADATA_SERVICE_ENDPOINT")
	dir, err := os.MkdirTemp("", "pcs-reliability-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	exe = os.Getenv("PCS_LIFECYCLE_BIN")
	if exe == "" {
		exe = filepath.Join(dir, "pcs-lifecycle")
		cmd := exec.Command("go", "build", "-trimpath", "-o", exe, "github.com/pcs-lifecycle/pcs-lifecycle/cmd/pcs-lifecycle")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "reliability: cannot build the executor: %v\n%s", err, out)
			os.Exit(1)
		}
	}
	code := m.Run()
	testenv.StopSharedS3()
	os.RemoveAll(dir)
	os.Exit(code)
}

// report appends one experiment's figures to $PCS_RELIABILITY_REPORT and logs them.
var reportMu sync.Mutex

func report(t testing.TB, experiment string, fields map[string]any) {
	t.Helper()
	fields["experiment"] = experiment
	b, _ := json.Marshal(fields)
	t.Logf("REPORT %s", b)
	path := os.Getenv("PCS_RELIABILITY_REPORT")
	if path == "" {
		return
	}
	reportMu.Lock()
	defer reportMu.Unlock()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Errorf("report: %v", err)
		return
	}
	defer f.Close()
	_, _ = f.Write(append(b, '\n'))
}

// node is a sandbox node (--root) with its own instance and boot ids.
type node struct {
	t        testing.TB
	name     string
	root     string
	work     string // the test's scratch: configuration, markers
	layout   paths.Layout
	instance string
	bootN    int
	env      map[string]string
	extra    []string // flags added to every command
}

var nodeSeq struct {
	sync.Mutex
	n int
}

// newNode returns a fresh node in its first boot. Its executor environment is minimal and
// explicit: no variable of the test process reaches it unless set with setenv.
func newNode(t testing.TB, name string) *node {
	t.Helper()
	nodeSeq.Lock()
	nodeSeq.n++
	seq := nodeSeq.n
	nodeSeq.Unlock()
	base := t.TempDir()
	n := &node{t: t, name: name, root: filepath.Join(base, "root"), work: filepath.Join(base, "work"),
		instance: fmt.Sprintf("i-rel%05d%08x", seq, time.Now().UnixNano()&0xffffffff), bootN: 1}
	n.layout = paths.New(n.root)
	for _, d := range []string{n.root, n.work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	empty := filepath.Join(n.work, "aws-empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	n.env = map[string]string{
		"PATH":                           "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME":                           "/root",
		"AWS_EC2_METADATA_DISABLED":      "true",
		"AWS_CONFIG_FILE":                empty,
		"AWS_SHARED_CREDENTIALS_FILE":    empty,
		"AWS_REGION":                     testenv.S3Region,
		"PCS_LIFECYCLE_DOWNLOAD_BACKOFF": "50ms",
		"PCS_NODE_ID":                    name,
	}
	return n
}

func (n *node) setenv(k, v string) { n.env[k] = v }

// useS3 points the executor at an S3 endpoint (versitygw or a FaultProxy in front of it).
func (n *node) useS3(endpoint string) {
	n.setenv("AWS_ENDPOINT_URL_S3", endpoint)
	n.setenv("AWS_ACCESS_KEY_ID", testenv.S3AccessKey)
	n.setenv("AWS_SECRET_ACCESS_KEY", testenv.S3SecretKey)
}

func (n *node) bootID() string { return fmt.Sprintf("%s-boot-%03d", n.instance, n.bootN) }

// reboot starts the node's next boot.
func (n *node) reboot() { n.bootN++ }

func (n *node) environ() []string {
	env := make([]string, 0, len(n.env))
	for k, v := range n.env {
		env = append(env, k+"="+v)
	}
	return env
}

// command builds an executor command on this node and boot (its own process group).
func (n *node) command(ctx context.Context, args ...string) *exec.Cmd {
	all := append([]string{}, args...)
	all = append(all, "--root", n.root, "--instance-id", n.instance, "--boot-id", n.bootID())
	all = append(all, n.extra...)
	cmd := exec.CommandContext(ctx, exe, all...)
	cmd.Env = n.environ()
	cmd.Dir = n.work
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// result is how one executor command ended.
type result struct {
	args    []string
	code    int
	stdout  string
	stderr  string
	elapsed time.Duration
	maxRSS  int64 // KiB, from the child's rusage (includes this process's own peak: see measured)
}

func (r result) String() string {
	return fmt.Sprintf("%v: exit %d after %s\nstdout:\n%s\nstderr:\n%s", r.args, r.code, r.elapsed.Round(time.Millisecond), r.stdout, r.stderr)
}

func finish(cmd *exec.Cmd, err error, start time.Time, stdout, stderr *bytes.Buffer) result {
	r := result{args: cmd.Args[1:], elapsed: time.Since(start), stdout: stdout.String(), stderr: stderr.String(), code: -1}
	var ee *exec.ExitError
	switch {
	case err == nil:
		r.code = 0
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			r.code = 128 + int(ws.Signal())
		}
	default:
		r.stderr += "\n(harness: " + err.Error() + ")"
	}
	if cmd.ProcessState != nil {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			r.maxRSS = ru.Maxrss
		}
	}
	return r
}

// run runs the executor to its end (at most limit, default 3 minutes).
func (n *node) run(args ...string) result {
	n.t.Helper()
	return n.runWithin(3*time.Minute, args...)
}

func (n *node) runWithin(limit time.Duration, args ...string) result {
	n.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := n.command(ctx, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	r := finish(cmd, err, start, &stdout, &stderr)
	if ctx.Err() != nil {
		// Errorf, not Fatalf: run is also called from goroutines of concurrent tests.
		n.t.Errorf("executor did not finish within %s (killed): %s", limit, r)
		r.code = -1
	}
	return r
}

// status runs `status --json`, which must load the state (exit 0, 3 or 4, or 5 when nothing
// ran on this boot; a JSON document).
func (n *node) status() *status.Document {
	n.t.Helper()
	r := n.runWithin(30*time.Second, "status", "--json")
	if r.code != 0 && r.code != 3 && r.code != 4 && r.code != 5 {
		n.t.Fatalf("status could not load the state: %s", r)
	}
	var d status.Document
	if err := json.Unmarshal([]byte(r.stdout), &d); err != nil {
		n.t.Fatalf("status --json is not JSON (%v): %s", err, r)
	}
	if d.ExitCode != r.code {
		n.t.Fatalf("status exited %d but its document says %d", r.code, d.ExitCode)
	}
	return &d
}

// writeConfig writes a configuration document into the node's scratch and returns its path.
func (n *node) writeConfig(doc *lifecycle.Document) string {
	n.t.Helper()
	p := filepath.Join(n.work, "config.json")
	if err := os.WriteFile(p, doc.Marshal(), 0o644); err != nil {
		n.t.Fatal(err)
	}
	return p
}

// scriptLog returns a per-script log's content ("" when absent).
func (n *node) scriptLog(stage, name string) string {
	b, _ := os.ReadFile(n.layout.ScriptLog(stage, name))
	return string(b)
}

// executorLog returns executor.log's lines, each decoded.
func (n *node) executorLog() []map[string]any {
	n.t.Helper()
	b, err := os.ReadFile(n.layout.ExecutorLog())
	if err != nil {
		n.t.Fatalf("executor.log: %v", err)
	}
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			n.t.Fatalf("executor.log line is not JSON: %q", line)
		}
		out = append(out, m)
	}
	return out
}

// logHas reports whether an executor.log line at level has a message matching re and the
// given script field ("" for any).
func (n *node) logHas(level, script string, re string) bool {
	n.t.Helper()
	rx := regexp.MustCompile(re)
	for _, m := range n.executorLog() {
		if level != "" && m["level"] != level {
			continue
		}
		if script != "" && m["script"] != script {
			continue
		}
		b, _ := json.Marshal(m)
		if rx.Match(b) {
			return true
		}
	}
	return false
}

// script builds one configuration entry.
func script(name, location string, policy lifecycle.ExecutionPolicy, onError lifecycle.OnError, args ...string) lifecycle.Script {
	if args == nil {
		args = []string{}
	}
	return lifecycle.Script{Name: name, ScriptSource: lifecycle.ScriptSource{ScriptLocation: location},
		Arguments: args, ExecutionPolicy: policy, OnError: onError}
}

func document(caching lifecycle.CachingPolicy, boot, ready []lifecycle.Script) *lifecycle.Document {
	return &lifecycle.Document{ScriptCachingPolicy: caching,
		Stages: lifecycle.StageScripts{NodeBootstrapped: boot, NodeReady: ready}}
}

// markerScript is a script that appends "start NAME" and "end NAME" lines to marker around
// body (shell).
func markerScript(marker, body string) []byte {
	return []byte("#!/bin/sh\n" +
		"echo \"start $PCS_LIFECYCLE_SCRIPT\" >> " + shellQuote(marker) + "\n" +
		body + "\n" +
		"echo \"end $PCS_LIFECYCLE_SCRIPT\" >> " + shellQuote(marker) + "\n")
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// markers counts "start NAME" / "end NAME" lines in a marker file.
type markers struct {
	starts, ends map[string]int
	lines        []string
}

func readMarkers(path string) markers {
	m := markers{starts: map[string]int{}, ends: map[string]int{}}
	b, _ := os.ReadFile(path)
	for _, l := range strings.Split(string(b), "\n") {
		if l == "" {
			continue
		}
		m.lines = append(m.lines, l)
		if s, ok := strings.CutPrefix(l, "start "); ok {
			m.starts[s]++
		} else if s, ok := strings.CutPrefix(l, "end "); ok {
			m.ends[s]++
		}
	}
	return m
}

// leftovers returns temporary files (".*.tmp-*") left in dir and its subdirectories.
func leftovers(t testing.TB, dirs ...string) []string {
	t.Helper()
	var out []string
	for _, dir := range dirs {
		_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && strings.Contains(d.Name(), ".tmp-") {
				out = append(out, p)
			}
			return nil
		})
	}
	return out
}

// processesOf returns the PIDs of live processes whose environment holds PCS_INSTANCE_ID=inst
// (the scripts of one sandbox node, wherever they were reparented).
func processesOf(inst string) []int {
	want := []byte("PCS_INSTANCE_ID=" + inst + "\x00")
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || !bytes.Contains(env, want) {
			continue
		}
		if st, err := os.ReadFile("/proc/" + e.Name() + "/stat"); err == nil {
			if i := bytes.LastIndexByte(st, ')'); i > 0 && len(st) > i+2 && st[i+2] == 'Z' {
				continue // a zombie: already dead
			}
		}
		pids = append(pids, pid)
	}
	return pids
}

// killScripts SIGKILLs every process of the node's scripts (power loss takes them too) and
// returns how many there were.
func killScripts(t testing.TB, inst string) int {
	t.Helper()
	killed := 0
	deadline := time.Now().Add(5 * time.Second)
	for {
		pids := processesOf(inst)
		if len(pids) == 0 {
			return killed
		}
		for _, p := range pids {
			if syscall.Kill(p, syscall.SIGKILL) == nil {
				killed++
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes of %s survive SIGKILL: %v", inst, pids)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// vmHWM reads a process's peak resident set size (KiB) from /proc/PID/status.
func vmHWM(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			f := strings.Fields(v)
			if len(f) > 0 {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				return n
			}
		}
	}
	return 0
}

// s3Scripts puts scripts into a fresh bucket of the shared versitygw and returns the server
// and bucket.
func s3Scripts(t testing.TB, scripts map[string][]byte) (*testenv.S3Server, string) {
	t.Helper()
	srv := testenv.SharedS3(t)
	b := srv.NewBucket(t)
	for k, v := range scripts {
		srv.Put(t, b, k, v)
	}
	return srv, b
}

// findScript returns a script of a stage in a status document.
func findScript(t testing.TB, d *status.Document, stage, name string) status.Script {
	t.Helper()
	for _, s := range d.Stages {
		if s.Name != stage {
			continue
		}
		for _, sc := range s.Scripts {
			if sc.Name == name {
				return sc
			}
		}
	}
	t.Fatalf("status has no %s/%s: %+v", stage, name, d)
	return status.Script{}
}

// lookupScript returns a script of a stage in a status document, if it is there.
func lookupScript(d *status.Document, stage, name string) (status.Script, bool) {
	for _, sc := range findStage(d, stage).Scripts {
		if sc.Name == name {
			return sc, true
		}
	}
	return status.Script{}, false
}

// findStage returns a stage of a status document (zero when absent).
func findStage(d *status.Document, stage string) status.Stage {
	for _, s := range d.Stages {
		if s.Name == stage {
			return s
		}
	}
	return status.Stage{}
}
