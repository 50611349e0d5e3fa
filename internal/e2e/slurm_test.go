package e2e_test

// The executor against a real slurmctld + slurmd + munge on loopback (testenv.StartSlurm):
// nodeReady waits for the node's registration, the job hold of --hold-jobs-until-ready, an
// operator's drain left alone, failures shown in the node's Comment (and drain), `wait` and
// scripts/slurm-prolog.sh, also as the real Prolog of a slurmd. Every node here is both a
// sandbox (--root) and a node of its test's own cluster, under the same name.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/slurm"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/testenv"
)

// holdReason is the drain reason of --hold-jobs-until-ready (issue 3).
const holdReason = "pcs-lifecycle: nodeReady running"

// startCluster starts a cluster whose compute nodes are the given sandbox nodes (no slurmd
// yet) and points their executors at it (SLURM_CONF, passed through to scontrol and scripts).
func startCluster(t *testing.T, nodes []*node, opts testenv.SlurmOptions) *testenv.Slurm {
	t.Helper()
	for _, n := range nodes {
		opts.Nodes = append(opts.Nodes, n.name)
	}
	s := testenv.StartSlurm(t, opts)
	for _, n := range nodes {
		n.env["SLURM_CONF"] = s.Conf
	}
	return s
}

// slurmArgs are the registration flags every Slurm test runs with: the cluster's scontrol, a
// quick poll, a deadline no case here should reach.
func slurmArgs(s *testenv.Slurm) []string {
	return []string{"--scontrol", s.Scontrol, "--registration-poll", "200ms", "--registration-timeout", "60s"}
}

// nodeState reads a node's state from the controller.
func nodeState(t testing.TB, s *testenv.Slurm, name string) slurm.State {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := slurm.New(slurm.Options{Env: s.Env()}).NodeState(ctx, name)
	require.NoError(t, err, "scontrol show node %s", name)
	return st
}

// showNodeScript prints `scontrol show node $PCS_NODE_ID` (what a nodeReady script sees of its
// node), after marking its start and before marking its end in marks/<name>.start|end (Unix
// nanoseconds) when marks is set, and waiting for release when it is set.
func showNodeScript(marks, name, release string) []byte {
	var b strings.Builder
	if marks != "" {
		fmt.Fprintf(&b, "date +%%s%%N > %s\n", shellQuote(filepath.Join(marks, name+".start")))
	}
	b.WriteString(`scontrol show node "$PCS_NODE_ID" || exit 90` + "\n")
	if release != "" {
		// Bounded, so that a test that never releases it does not hang the executor forever.
		fmt.Fprintf(&b, "echo waiting >&2\ni=0\nwhile [ ! -e %s ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done\n", shellQuote(release))
	}
	if marks != "" {
		fmt.Fprintf(&b, "date +%%s%%N > %s\n", shellQuote(filepath.Join(marks, name+".end")))
	}
	return sh(b.String())
}

// shownState parses the `scontrol show node` output of the last run of a showNodeScript.
func (n *node) shownState(stage, name string) slurm.State {
	n.t.Helper()
	rs := n.runs(stage, name)
	require.NotEmpty(n.t, rs, "%s/%s never ran", stage, name)
	out := strings.ReplaceAll(rs[len(rs)-1].output, "waiting\n", "")
	st, err := slurm.ParseNode([]byte(out), n.name)
	require.NoError(n.t, err, "the script's scontrol output:\n%s", rs[len(rs)-1].output)
	return st
}

// mark reads a Unix-nanosecond timestamp a script wrote.
func mark(t testing.TB, path string) time.Time {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	ns, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	require.NoError(t, err, "%s: %q", path, b)
	return time.Unix(0, ns)
}

// fileHas reports whether the file at path contains s (false when it does not exist).
func fileHas(path, s string) bool {
	b, err := os.ReadFile(path)
	return err == nil && bytes.Contains(b, []byte(s))
}

// waitJobEnd polls a job until it is in a final state (or d passed) and returns its state.
func waitJobEnd(t testing.TB, s *testenv.Slurm, id string, d time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		st := s.JobState(t, id)
		switch st {
		case "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "BOOT_FAIL", "OUT_OF_MEMORY":
			return st
		}
		if time.Now().After(deadline) {
			return st
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// jobReason is the Reason= of a job as scontrol shows it ("None" until the scheduler gave one).
func jobReason(t testing.TB, s *testenv.Slurm, id string) string {
	t.Helper()
	out := s.Run(t, "scontrol", "-o", "show", "job", id)
	_, rest, ok := strings.Cut(out, " Reason=")
	if !ok {
		return "None"
	}
	reason, _, _ := strings.Cut(rest, " ")
	return reason
}

// logIndex is the index of the first executor.log line matching kv (-1 when none).
func (n *node) logIndex(kv ...string) int {
	n.t.Helper()
	for i, l := range n.executorLog() {
		if matches(l, kv) {
			return i
		}
	}
	return -1
}

// TestSlurmReadyWaitsForLateSlurmd: `run --stage nodeReady` started before slurmd waits for
// the node's registration (executor.log says so), then runs nodeReady, whose script finds
// scontrol working and its node registered.
func TestSlurmReadyWaitsForLateSlurmd(t *testing.T) {
	t.Parallel()
	b := newBucket(t)
	n := newNode(t)
	s := startCluster(t, []*node{n}, testenv.SlurmOptions{})
	cfg := n.writeConfig(stages(nil, []scriptDef{
		script("show-node", b.put(t, "show-node.sh", showNodeScript("", "", ""))).every(),
	}))
	p := n.start("run", append([]string{"--stage", ready, "--config", cfg}, slurmArgs(s)...)...)
	executorLog := filepath.Join(n.logDir(), "executor.log")
	eventually(t, 20*time.Second, "executor.log to say it waits for the registration", func() bool {
		return fileHas(executorLog, "waiting for the node's Slurm registration")
	})
	require.False(t, p.exited(), "nodeReady did not wait for slurmd:\n%s", p.report())
	require.NoFileExists(t, n.scriptLogPath(ready, "show-node"), "a nodeReady script ran before the node registered")
	require.Equal(t, "UNKNOWN", nodeState(t, s, n.name).Base())

	s.StartSlurmd(t, n.name)
	r := p.wait(t, 60*time.Second)
	require.Equal(t, 0, r.code, "%s", r)
	require.Regexp(t, "done waiting for node "+n.name+" to register with the Slurm controller after \\S+: registered \\(last answer: IDLE", r.stderr)
	require.Regexp(t, `pcs-lifecycle: exit 0 for stage nodeReady after \S+: 1 ran \(0 failed\), 0 skipped\n$`, r.stderr)

	n.requireLog("level", "INFO", "message~", "waiting for the node's Slurm registration", "node", n.name)
	reg := n.logIndex("message", "node registered with Slurm", "node", n.name)
	start := n.logIndex("message", "starting script", "script", "show-node")
	require.GreaterOrEqual(t, reg, 0, "no registration line in executor.log")
	require.Greater(t, start, reg, "nodeReady started only after the registration")

	st := n.shownState(ready, "show-node")
	require.True(t, slurm.Registered(st), "the script saw its node unregistered: %s", st)
	require.Equal(t, "IDLE", st.Base())
	require.Equal(t, "0", n.runs(ready, "show-node")[0].exit)
}

// TestSlurmRegistrationTimeout: a node that never registers: after --registration-timeout the
// executor exits 1 with an ERROR line, and no nodeReady script ran.
func TestSlurmRegistrationTimeout(t *testing.T) {
	t.Parallel()
	b := newBucket(t)
	n := newNode(t)
	s := startCluster(t, []*node{n}, testenv.SlurmOptions{})
	cfg := n.writeConfig(stages(nil, []scriptDef{
		script("never", b.put(t, "never.sh", okScript("ran"))).onErr("CONTINUE"),
	}))
	r := n.run("run", "--stage", ready, "--config", cfg, "--scontrol", s.Scontrol,
		"--registration-poll", "200ms", "--registration-timeout", "2s")
	require.Equal(t, 1, r.code, "%s", r)
	require.Contains(t, r.stderr, "did not register with Slurm within 2s")
	// The wait says what it waits for, its limit and, at its end, the last answer.
	require.Contains(t, r.stderr, "pcs-lifecycle: waiting for node "+n.name+" to register with the Slurm controller, limit 2s (scontrol show node "+
		n.name+", every 200ms)\n")
	require.Regexp(t, "pcs-lifecycle: done waiting for node "+n.name+" to register with the Slurm controller after \\S+: timed out \\(last answer: UNKNOWN", r.stderr)
	l := n.requireLog("level", "ERROR", "message~", "did not register", "stage", ready)
	require.Equal(t, n.name, l.str("node"))
	require.NoFileExists(t, n.scriptLogPath(ready, "never"))
	require.Empty(t, n.find("message", "starting script"))
}

// TestSlurmNotConfiguredRunsReadyAtOnce: where Slurm is not configured (SLURM_CONF names a
// missing file, or no scontrol) nodeReady runs at once, with a WARN line.
func TestSlurmNotConfiguredRunsReadyAtOnce(t *testing.T) {
	t.Parallel()
	b := newBucket(t)
	loc := b.put(t, "at-once.sh", okScript("ran at once"))
	notExec := filepath.Join(t.TempDir(), "scontrol")
	require.NoError(t, os.WriteFile(notExec, []byte("#!/bin/sh\nexit 0\n"), 0o644))
	cases := map[string]struct {
		env  map[string]string
		args []string
	}{
		"SLURM_CONF missing":      {env: map[string]string{"SLURM_CONF": "/nonexistent/slurm.conf"}},
		"scontrol missing":        {args: []string{"--scontrol", "/nonexistent/bin/scontrol"}},
		"scontrol not executable": {args: []string{"--scontrol", notExec}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			n := newNode(t)
			for k, v := range tc.env {
				n.env[k] = v
			}
			cfg := n.writeConfig(stages(nil, []scriptDef{script("at-once", loc)}))
			args := append([]string{"--stage", ready, "--config", cfg, "--registration-poll", "200ms", "--registration-timeout", "60s"}, tc.args...)
			n.requireRun(0, "run", args...) // a wait for a registration that cannot come would end in exit 1
			l := n.requireLog("level", "WARN", "message~", "not configured", "stage", ready)
			require.NotEmpty(t, l.str("error"))
			rs := n.runs(ready, "at-once")
			require.Len(t, rs, 1)
			require.Equal(t, "0", rs[0].exit)
			require.Equal(t, "ran at once\n", rs[0].output)
			require.Empty(t, n.find("level", "ERROR"))
		})
	}
}

// TestSlurmHoldJobsUntilReady: with --hold-jobs-until-ready the node is drained (our reason)
// while nodeReady runs; a job submitted meanwhile stays PENDING and starts only after the
// stage ended and the node was resumed.
func TestSlurmHoldJobsUntilReady(t *testing.T) {
	t.Parallel()
	b := newBucket(t)
	n := newNode(t)
	s := startCluster(t, []*node{n}, testenv.SlurmOptions{})
	s.StartSlurmd(t, n.name)
	tmp := t.TempDir()
	release := filepath.Join(tmp, "release")
	cfg := n.writeConfig(stages(nil, []scriptDef{
		script("configure", b.put(t, "configure.sh", showNodeScript(tmp, "configure", release))),
	}))
	p := n.start("run", append([]string{"--stage", ready, "--config", cfg, "--hold-jobs-until-ready"}, slurmArgs(s)...)...)
	eventually(t, 30*time.Second, "the nodeReady script to start", func() bool {
		return fileHas(n.scriptLogPath(ready, "configure"), "waiting\n")
	})
	st := nodeState(t, s, n.name)
	require.True(t, st.Drained(), "node not drained while nodeReady runs: %s", st)
	require.Equal(t, holdReason, st.Reason)
	seen := n.shownState(ready, "configure")
	require.True(t, seen.Drained(), "the script saw its node %s", seen)
	require.Equal(t, holdReason, seen.Reason)

	job := s.Sbatch(t, "date +%s%N", "-w", n.name)
	// Once the scheduler has looked at the job (it gives a reason for keeping it pending), it
	// must still be pending: the node is held.
	eventually(t, 30*time.Second, "the scheduler to consider the job", func() bool {
		return jobReason(t, s, job) != "None"
	})
	require.Equal(t, "PENDING", s.JobState(t, job), "a job started while nodeReady ran")
	require.Empty(t, s.JobOutput(job))
	require.False(t, p.exited(), "%s", p.report())
	require.NoError(t, os.WriteFile(release, nil, 0o644))
	r := p.wait(t, 60*time.Second)
	require.Equal(t, 0, r.code, "%s", r)

	require.Equal(t, "COMPLETED", waitJobEnd(t, s, job, 60*time.Second), "slurmctld log:\n%s", readFileString(s.SlurmctldLog()))
	ns, err := strconv.ParseInt(strings.TrimSpace(s.JobOutput(job)), 10, 64)
	require.NoError(t, err, "job output %q", s.JobOutput(job))
	ended := mark(t, filepath.Join(tmp, "configure.end"))
	require.True(t, time.Unix(0, ns).After(ended), "the job ran at %s, before nodeReady ended at %s", time.Unix(0, ns), ended)
	st = nodeState(t, s, n.name)
	require.False(t, st.Drained(), "node still drained after nodeReady: %s (%q)", st, st.Reason)
	n.requireLog("message", "node drained while nodeReady runs", "reason", holdReason)
	n.requireLog("message", "node resumed after nodeReady")
}

// TestSlurmOperatorDrainLeftAlone: a node an operator drained stays drained, with their
// reason, through a run with --hold-jobs-until-ready.
func TestSlurmOperatorDrainLeftAlone(t *testing.T) {
	t.Parallel()
	const reason = "operator maintenance"
	b := newBucket(t)
	n := newNode(t)
	s := startCluster(t, []*node{n}, testenv.SlurmOptions{})
	s.StartSlurmd(t, n.name)
	s.Run(t, "scontrol", "update", "NodeName="+n.name, "State=DRAIN", "Reason="+reason)
	cfg := n.writeConfig(stages(nil, []scriptDef{
		script("show-node", b.put(t, "show-node.sh", showNodeScript("", "", ""))),
	}))
	n.requireRun(0, "run", append([]string{"--stage", ready, "--config", cfg, "--hold-jobs-until-ready"}, slurmArgs(s)...)...)

	seen := n.shownState(ready, "show-node")
	require.True(t, seen.Drained())
	require.Equal(t, reason, seen.Reason, "the operator's reason was replaced while nodeReady ran")
	st := nodeState(t, s, n.name)
	require.True(t, st.Drained(), "the operator's drain was undone: %s", st)
	require.Equal(t, reason, st.Reason)
	n.requireLog("level", "WARN", "message~", "could not drain")
	require.Empty(t, n.find("message", "node resumed after nodeReady"))
}

// TestSlurmFailureComment: a script failed under CONTINUE (in either stage) shows in the
// node's Comment once it registered; with --drain-on-failure the node is left drained with the
// same text as reason, also when it replaces our own job hold.
func TestSlurmFailureComment(t *testing.T) {
	t.Parallel()
	b := newBucket(t)
	okLoc := b.put(t, "ok.sh", okScript("ok"))
	bootFail, bootOnly, readyDrain, readyComment := newNode(t), newNode(t), newNode(t), newNode(t)
	s := startCluster(t, []*node{bootFail, bootOnly, readyDrain, readyComment}, testenv.SlurmOptions{})
	cases := []struct {
		name    string
		n       *node
		doc     doc
		args    []string
		code    int
		comment string
		drained bool
	}{
		{
			name: "nodeBootstrapped failure, hold and drain-on-failure",
			n:    bootFail,
			doc: stages([]scriptDef{script("bad-boot", b.put(t, "bad-boot.sh", failScript(7))).onErr("CONTINUE")},
				[]scriptDef{script("fine", okLoc)}),
			args:    []string{"--hold-jobs-until-ready", "--drain-on-failure"},
			code:    0, // nodeReady itself succeeded
			comment: "pcs-lifecycle: nodeBootstrapped/bad-boot exit=7",
			drained: true,
		},
		{
			// The nodeReady unit of per-stage mode runs whether or not nodeReady has scripts.
			name:    "nodeBootstrapped failure, no nodeReady scripts, drain-on-failure",
			n:       bootOnly,
			doc:     stages([]scriptDef{script("bad-boot", b.put(t, "bad-boot-2.sh", failScript(8))).onErr("CONTINUE")}, nil),
			args:    []string{"--drain-on-failure"},
			code:    0,
			comment: "pcs-lifecycle: nodeBootstrapped/bad-boot exit=8",
			drained: true,
		},
		{
			name: "nodeReady failure, drain-on-failure",
			n:    readyDrain,
			doc: stages(nil, []scriptDef{
				script("bad-ready", b.put(t, "bad-ready.sh", failScript(5))).onErr("CONTINUE"),
				script("after", okLoc),
			}),
			args:    []string{"--drain-on-failure"},
			code:    3,
			comment: "pcs-lifecycle: nodeReady/bad-ready exit=5",
			drained: true,
		},
		{
			name: "nodeReady failure, comment only",
			n:    readyComment,
			doc: stages(nil, []scriptDef{
				script("bad-ready", b.put(t, "bad-ready-2.sh", failScript(6))).onErr("CONTINUE"),
				script("after", okLoc),
			}),
			code:    3,
			comment: "pcs-lifecycle: nodeReady/bad-ready exit=6",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			n := tc.n.with(t)
			s.StartSlurmd(t, n.name)
			cfg := n.writeConfig(tc.doc)
			if _, ok := tc.doc.Stages[bootstrapped]; ok {
				n.requireRun(3, "run", "--stage", bootstrapped, "--config", cfg)
			}
			n.requireRun(tc.code, "run", append(append([]string{"--stage", ready, "--config", cfg}, slurmArgs(s)...), tc.args...)...)
			st := nodeState(t, s, n.name)
			require.Equal(t, tc.comment, st.Comment)
			n.requireLog("message", "node comment set", "comment", tc.comment)
			if tc.drained {
				require.True(t, st.Drained(), "node not left drained: %s", st)
				require.Equal(t, tc.comment, st.Reason)
				n.requireLog("level", "WARN", "message", "node left drained after a failure", "reason", tc.comment)
			} else {
				require.False(t, st.Drained(), "node drained without --drain-on-failure: %s (%q)", st, st.Reason)
			}
			if _, ok := tc.doc.Stages[ready]; ok && len(tc.doc.Stages[ready]) > 1 {
				require.Len(t, n.runs(ready, "after"), 1, "CONTINUE went on with the next script")
			}
		})
	}
}

// ---------------------------------------------------------------------------------------------
// `wait --stage` and scripts/slurm-prolog.sh.

// prologPath is scripts/slurm-prolog.sh of this module.
func prologPath(t testing.TB) string {
	t.Helper()
	root, err := testenv.ModuleRoot()
	require.NoError(t, err)
	p := filepath.Join(root, "scripts", "slurm-prolog.sh")
	require.FileExists(t, p)
	return p
}

// prologEnv is the environment scripts/slurm-prolog.sh runs in on this node: the prolog finds
// the executor through PCS_LIFECYCLE (default /usr/bin/pcs-lifecycle; it sets PATH itself), and
// `pcs-lifecycle wait` the sandbox through the PCS_* variables it inherits.
func (n *node) prologEnv(timeout string) []string {
	return append(n.environ(),
		"PCS_LIFECYCLE="+binPath,
		"PCS_LIFECYCLE_ROOT="+n.root,
		"PCS_NODE_ID="+n.name,
		"PCS_INSTANCE_ID="+n.instance,
		"PCS_BOOT_ID="+n.bootID(),
		"PCS_LIFECYCLE_PROLOG_TIMEOUT="+timeout,
		"SLURM_JOB_ID=4242",
	)
}

// startCmd starts path with args and env in the background, like node.start.
func startCmd(t testing.TB, env []string, path string, args ...string) *running {
	t.Helper()
	cmd := exec.Command(path, args...)
	cmd.Env = env
	p := &running{cmd: cmd, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = &p.stdout, &p.stderr
	p.start = time.Now()
	require.NoError(t, cmd.Start())
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
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// TestWaitStage: `wait --stage nodeReady` blocks while a run is in progress and returns the
// stage's code once it ended (0, 3, 4); with --timeout it gives up with 1. The Slurm prolog
// built on it lets jobs through after 0 and 3, refuses them (1) after 4.
func TestWaitStage(t *testing.T) {
	t.Parallel()
	b := newBucket(t)
	cases := []struct {
		name    string
		exit    int    // the gate script's exit code
		onError string // its onError
		code    int    // the stage's (and wait's) code
		prolog  int    // the prolog's exit code
	}{
		{name: "succeeded", exit: 0, onError: "TERMINATE", code: 0, prolog: 0},
		{name: "CONTINUE failure", exit: 5, onError: "CONTINUE", code: 3, prolog: 0},
		{name: "STOP_SEQUENCE failure", exit: 5, onError: "STOP_SEQUENCE", code: 3, prolog: 0},
		{name: "TERMINATE failure", exit: 9, onError: "TERMINATE", code: 4, prolog: 1},
	}
	prolog := prologPath(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// No Slurm here: `wait` reads the executor's state only.
			n := newNode(t, withEnv("SLURM_CONF", "/nonexistent/slurm.conf"))
			release := filepath.Join(t.TempDir(), "release")
			gate := sh(fmt.Sprintf("echo waiting\ni=0\nwhile [ ! -e %s ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done\nexit %d",
				shellQuote(release), tc.exit))
			cfg := n.writeConfig(stages(nil, []scriptDef{
				script("gate", b.put(t, "gate-"+strconv.Itoa(tc.exit)+tc.onError+".sh", gate)).onErr(tc.onError),
			}))

			// Before anything ran on this boot: nothing to wait for but the timeout.
			r := n.run("wait", "--stage", ready, "--timeout", "1s")
			require.Equal(t, 1, r.code, "%s", r)
			require.Contains(t, r.stderr, "timed out after 1s")

			p := n.start("run", "--stage", ready, "--config", cfg, "--registration-timeout", "0")
			eventually(t, 30*time.Second, "the gate script to start", func() bool {
				return fileHas(n.scriptLogPath(ready, "gate"), "waiting\n")
			})
			w := n.start("wait", "--stage", ready, "--timeout", "20s")
			pr := startCmd(t, n.prologEnv("20s"), "/bin/sh", prolog)
			// A wait whose timeout passes while the stage runs.
			r = n.run("wait", "--stage", ready, "--timeout", "2s")
			require.Equal(t, 1, r.code, "%s", r)
			require.Contains(t, r.stderr, "timed out after 2s")
			require.False(t, w.exited(), "wait returned while nodeReady ran: %s", w.report())
			require.False(t, pr.exited(), "the prolog returned while nodeReady ran: %s", pr.report())

			require.NoError(t, os.WriteFile(release, nil, 0o644))
			r = p.wait(t, 30*time.Second)
			require.Equal(t, tc.code, r.code, "%s", r)
			r = w.wait(t, 10*time.Second)
			require.Equal(t, tc.code, r.code, "wait: %s", r)
			r = pr.wait(t, 10*time.Second)
			require.Equal(t, tc.prolog, r.code, "prolog: %s", r)

			// Once ended, wait answers at once, and so does the prolog.
			r = n.run("wait", "--stage", ready, "--timeout", "5s")
			require.Equal(t, tc.code, r.code, "%s", r) // a wait that blocked would end in exit 1, timed out
			r = n.runPathEnv("/bin/sh", []string{prolog}, n.prologEnv("5s"))
			require.Equal(t, tc.prolog, r.code, "prolog: %s", r)
		})
	}
}

// runPathEnv runs path with argv and exactly env.
func (n *node) runPathEnv(path string, argv, env []string) result {
	n.t.Helper()
	p := startCmd(n.t, env, path, argv...)
	return p.wait(n.t, runTimeout)
}

// TestSlurmPrologHoldsJobs: scripts/slurm-prolog.sh as the real Prolog (PrologFlags=Alloc) of
// a real slurmd, calling the real executor: a job submitted while nodeReady runs starts only
// after the stage ended.
func TestSlurmPrologHoldsJobs(t *testing.T) {
	t.Parallel()
	b := newBucket(t)
	n := newNode(t)
	tmp := t.TempDir()
	wrapperDir, err := os.MkdirTemp("", "e2e-prolog-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(wrapperDir) })
	require.NoError(t, os.Chmod(wrapperDir, 0o755))
	wrapper := filepath.Join(wrapperDir, "prolog")
	var w strings.Builder
	w.WriteString("#!/bin/sh\n")
	for _, kv := range n.prologEnv("60s") {
		if strings.HasPrefix(kv, "PATH=") || strings.HasPrefix(kv, "SLURM_JOB_ID=") {
			continue
		}
		k, v, _ := strings.Cut(kv, "=")
		fmt.Fprintf(&w, "export %s=%s\n", k, shellQuote(v))
	}
	fmt.Fprintf(&w, "exec /bin/sh %s\n", shellQuote(prologPath(t)))
	require.NoError(t, os.WriteFile(wrapper, []byte(w.String()), 0o755))

	s := startCluster(t, []*node{n}, testenv.SlurmOptions{Prolog: wrapper, PrologFlags: "Alloc", Extra: []string{"BatchStartTimeout=2"}})
	s.StartSlurmd(t, n.name)
	release := filepath.Join(tmp, "release")
	cfg := n.writeConfig(stages(nil, []scriptDef{
		script("configure", b.put(t, "configure.sh", showNodeScript(tmp, "configure", release))),
	}))
	p := n.start("run", append([]string{"--stage", ready, "--config", cfg}, slurmArgs(s)...)...)
	eventually(t, 30*time.Second, "the nodeReady script to start", func() bool {
		return fileHas(n.scriptLogPath(ready, "configure"), "waiting\n")
	})
	job := s.Sbatch(t, "date +%s%N", "-w", n.name)
	// The job is given the node, and its prolog (pcs-lifecycle wait) holds it there.
	eventually(t, 30*time.Second, "the job to be dispatched to the node", func() bool {
		return s.JobState(t, job) != "PENDING"
	})
	require.Contains(t, []string{"CONFIGURING", "RUNNING"}, s.JobState(t, job))
	require.Empty(t, s.JobOutput(job), "the job started while nodeReady ran")
	require.NoError(t, os.WriteFile(release, nil, 0o644))
	r := p.wait(t, 60*time.Second)
	require.Equal(t, 0, r.code, "%s", r)
	require.Equal(t, "COMPLETED", waitJobEnd(t, s, job, 60*time.Second), "slurmd log:\n%s", readFileString(s.SlurmdLog(n.name)))
	ns, err := strconv.ParseInt(strings.TrimSpace(s.JobOutput(job)), 10, 64)
	require.NoError(t, err, "job output %q", s.JobOutput(job))
	ended := mark(t, filepath.Join(tmp, "configure.end"))
	require.True(t, time.Unix(0, ns).After(ended), "the job ran at %s, before nodeReady ended at %s", time.Unix(0, ns), ended)
}

func readFileString(p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}

// report is the result of a background process that exited, without racing with one still
// running.
func (p *running) report() string {
	if !p.exited() {
		return fmt.Sprintf("pid %d still running", p.pid())
	}
	return p.res.String()
}
