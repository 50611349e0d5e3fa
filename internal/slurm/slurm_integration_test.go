package slurm_test

// Tests against a real slurmctld + slurmd + munge on loopback (testenv.StartSlurm). They fail,
// with the apt-get command to run, where those are not installed.

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/slurm"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/testenv"
)

const ourReason = "pcs-lifecycle: nodeReady running"

func newClient(s *testenv.Slurm) *slurm.Client {
	return slurm.New(slurm.Options{Env: s.Env()})
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func TestWaitRegisteredWaitsForLateSlurmd(t *testing.T) {
	t.Parallel()
	s := testenv.StartSlurm(t, testenv.SlurmOptions{})
	c := newClient(s)

	var mu sync.Mutex
	var seen []string
	done := make(chan error, 1)
	polledTwice := make(chan struct{})
	go func() {
		done <- c.WaitRegistered(context.Background(), "node1", 250*time.Millisecond, time.Minute, func(st slurm.State, err error) {
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				seen = append(seen, "error: "+err.Error())
			} else {
				seen = append(seen, st.String())
			}
			if len(seen) == 2 {
				close(polledTwice)
			}
		})
	}()
	// Two polls have seen the node unregistered (slurmd not started): the wait goes on.
	select {
	case <-polledTwice:
	case <-time.After(30 * time.Second):
		t.Fatal("WaitRegistered did not poll twice in 30 s")
	}
	select {
	case err := <-done:
		t.Fatalf("WaitRegistered returned before slurmd started: %v", err)
	default:
	}
	s.StartSlurmd(t, "node1")
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("WaitRegistered did not return within 30 s of slurmd registering")
	}

	mu.Lock()
	defer mu.Unlock()
	// Polled before slurmd started and once after (how many times depends on the machine's load).
	require.GreaterOrEqual(t, len(seen), 2, "%q", seen)
	assert.Equal(t, "UNKNOWN", seen[0], "a node whose slurmd never started")
	assert.Equal(t, "IDLE", seen[len(seen)-1])
	for _, s := range seen[:len(seen)-1] {
		assert.Contains(t, s, "UNKNOWN", "every poll before the last saw the node unregistered")
	}

	st, err := c.NodeState(ctxFor(t, 30*time.Second), "node1")
	require.NoError(t, err)
	assert.True(t, slurm.Registered(st))
}

func TestWaitRegisteredTimesOut(t *testing.T) {
	t.Parallel()
	s := testenv.StartSlurm(t, testenv.SlurmOptions{FutureNodes: []string{"future1"}})
	c := newClient(s)

	for _, node := range []string{"node1", "future1"} {
		start := time.Now()
		polls := 0
		err := c.WaitRegistered(context.Background(), node, 200*time.Millisecond, 1500*time.Millisecond, func(slurm.State, error) { polls++ })
		elapsed := time.Since(start) // at least the timeout: a designed wait, never shorter
		require.ErrorIs(t, err, slurm.ErrRegistrationTimeout, node)
		var te *slurm.TimeoutError
		require.ErrorAs(t, err, &te)
		assert.Equal(t, node, te.Node)
		assert.NoError(t, te.LastErr)
		assert.Equal(t, polls, te.Polls)
		assert.GreaterOrEqual(t, polls, 2)
		assert.GreaterOrEqual(t, elapsed, 1500*time.Millisecond)
		if node == "future1" {
			assert.Equal(t, "FUTURE", te.Last.String())
		} else {
			assert.Equal(t, "UNKNOWN", te.Last.Base())
		}
		assert.Contains(t, err.Error(), "not registered with the slurm controller within 1.5s")
	}

	// An unknown node is polled through too (a dynamic node may appear later).
	_, err := c.NodeState(ctxFor(t, 30*time.Second), "nosuchnode")
	assert.ErrorIs(t, err, slurm.ErrNodeNotFound)
	assert.NotErrorIs(t, err, slurm.ErrNotConfigured)
	err = c.WaitRegistered(context.Background(), "nosuchnode", 100*time.Millisecond, 500*time.Millisecond, nil)
	require.ErrorIs(t, err, slurm.ErrRegistrationTimeout)
	var te *slurm.TimeoutError
	require.ErrorAs(t, err, &te)
	assert.ErrorIs(t, te.LastErr, slurm.ErrNodeNotFound)

	// timeout 0 never waits and never runs scontrol.
	require.NoError(t, c.WaitRegistered(context.Background(), "node1", 0, 0, func(slurm.State, error) { t.Error("polled with timeout 0") }))

	// A cancelled context ends the wait.
	ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
	defer cancel()
	err = c.WaitRegistered(ctx, "node1", 100*time.Millisecond, time.Minute, nil)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.NotErrorIs(t, err, slurm.ErrRegistrationTimeout)
}

func TestNotConfigured(t *testing.T) {
	t.Parallel()
	s := testenv.StartSlurm(t, testenv.SlurmOptions{}) // a working cluster, to show it is not that
	emptyDir := t.TempDir()
	emptyConf := filepath.Join(t.TempDir(), "slurm.conf")
	require.NoError(t, os.WriteFile(emptyConf, nil, 0o644))

	tests := []struct {
		name   string
		opts   slurm.Options
		noConf bool // ErrNoConfig: scontrol ran and found no configuration
	}{
		{name: "scontrol path missing", opts: slurm.Options{Scontrol: "/nonexistent/bin/scontrol", Env: s.Env()}},
		{name: "scontrol not in PATH", opts: slurm.Options{Env: []string{"PATH=" + emptyDir, "SLURM_CONF=" + s.Conf}}},
		{name: "SLURM_CONF names a missing file", opts: slurm.Options{Env: []string{"PATH=" + s.BinDir, "SLURM_CONF=/nonexistent/slurm.conf"}}},
		{name: "SLURM_CONF names a directory", opts: slurm.Options{Env: []string{"PATH=" + s.BinDir, "SLURM_CONF=" + emptyDir}}},
		{name: "SLURM_CONF empty file", opts: slurm.Options{Env: []string{"PATH=" + s.BinDir, "SLURM_CONF=" + emptyConf}, NoConfigGrace: 700 * time.Millisecond}, noConf: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := slurm.New(tt.opts)
			// Within 30 s: scontrol itself retries a missing SLURM_CONF for 60 s, and a call cut
			// by this context would be its error, not ErrNotConfigured.
			_, err := c.NodeState(ctxFor(t, 30*time.Second), "node1")
			require.ErrorIs(t, err, slurm.ErrNotConfigured)
			assert.Equal(t, tt.noConf, errors.Is(err, slurm.ErrNoConfig), "%v", err)

			start := time.Now()
			polls := 0
			err = c.WaitRegistered(context.Background(), "node1", 100*time.Millisecond, time.Minute, func(_ slurm.State, err error) {
				polls++
				assert.ErrorIs(t, err, slurm.ErrNotConfigured)
			})
			require.ErrorIs(t, err, slurm.ErrNotConfigured)
			if tt.noConf {
				// Polled through for NoConfigGrace (a configless slurmd may be fetching it).
				assert.GreaterOrEqual(t, time.Since(start), 700*time.Millisecond)
				assert.Greater(t, polls, 3)
			} else {
				assert.Equal(t, 1, polls)
			}

			for name, op := range map[string]func() error{
				"Drain":      func() error { return c.Drain(context.Background(), "node1", ourReason) },
				"Resume":     func() error { return c.Resume(context.Background(), "node1", ourReason) },
				"SetComment": func() error { return c.SetComment(context.Background(), "node1", "x") },
			} {
				assert.ErrorIs(t, op(), slurm.ErrNotConfigured, name)
			}
		})
	}
}

func TestControllerUnreachableIsTransient(t *testing.T) {
	t.Parallel()
	s := testenv.StartSlurm(t, testenv.SlurmOptions{})
	// The same cluster's configuration with the controller on a port nobody listens on.
	conf, err := os.ReadFile(s.Conf)
	require.NoError(t, err)
	dead := regexp.MustCompile(`(?m)^SlurmctldPort=\d+$`).ReplaceAll(conf, []byte("SlurmctldPort=1"))
	deadConf := filepath.Join(t.TempDir(), "slurm.conf")
	require.NoError(t, os.WriteFile(deadConf, dead, 0o644))
	c := slurm.New(slurm.Options{Env: []string{"PATH=" + s.BinDir, "SLURM_CONF=" + deadConf}})

	_, err = c.NodeState(ctxFor(t, 60*time.Second), "node1")
	require.ErrorIs(t, err, slurm.ErrUnreachable)
	assert.NotErrorIs(t, err, slurm.ErrNotConfigured)
	var ce *slurm.CommandError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, 1, ce.ExitCode)
	assert.Contains(t, ce.Output, "Unable to contact slurm controller")
}

func TestDrainResume(t *testing.T) {
	t.Parallel()
	s := testenv.StartSlurm(t, testenv.SlurmOptions{})
	s.StartSlurmd(t, "node1")
	c := newClient(s)
	ctx := ctxFor(t, time.Minute)

	require.NoError(t, c.Drain(ctx, "node1", ourReason))
	st, err := c.NodeState(ctx, "node1")
	require.NoError(t, err)
	assert.True(t, st.Drained(), st.String())
	assert.Equal(t, ourReason, st.Reason)
	assert.Equal(t, "root", st.ReasonUser)
	assert.True(t, slurm.Registered(st), "a drained node is registered")
	assert.Contains(t, s.Run(t, "scontrol", "show", "node", "node1"), "Reason="+ourReason+" [root@")

	// Draining again with our reason changes nothing.
	require.NoError(t, c.Drain(ctx, "node1", ourReason))

	require.NoError(t, c.Resume(ctx, "node1", ourReason))
	st, err = c.NodeState(ctx, "node1")
	require.NoError(t, err)
	assert.Equal(t, "IDLE", st.Base())
	assert.False(t, st.Drained(), st.String())
	assert.Empty(t, st.Reason)
	// slurmctld flags a resumed node NOT_RESPONDING until its next ping of the node answers:
	// Registered is false for that moment, and true again without anyone doing anything.
	resumed := time.Now()
	require.NoError(t, c.WaitRegistered(ctx, "node1", 100*time.Millisecond, 30*time.Second, nil))
	t.Logf("registered again %v after the resume (state right after it: %s)", time.Since(resumed).Round(time.Millisecond), st)

	// Resuming a node nobody holds is a no-op.
	require.NoError(t, c.Resume(ctx, "node1", ourReason))

	// Our hold turned into a failure drain, without lifting it in between.
	const failed = "pcs-lifecycle: nodeReady/check gpu exit=3"
	require.NoError(t, c.Drain(ctx, "node1", ourReason))
	require.NoError(t, c.ReplaceDrain(ctx, "node1", ourReason, failed))
	st, err = c.NodeState(ctx, "node1")
	require.NoError(t, err)
	assert.True(t, st.Drained(), st.String())
	assert.Equal(t, failed, st.Reason)
	require.NoError(t, c.ReplaceDrain(ctx, "node1", ourReason, failed), "already so")
	require.ErrorIs(t, c.Resume(ctx, "node1", ourReason), slurm.ErrForeignDrain, "no longer the hold's reason")
	require.NoError(t, c.Resume(ctx, "node1", failed))
	require.NoError(t, c.WaitRegistered(ctx, "node1", 100*time.Millisecond, 30*time.Second, nil))
	require.NoError(t, c.ReplaceDrain(ctx, "node1", ourReason, failed), "a node not held is drained")
	st, err = c.NodeState(ctx, "node1")
	require.NoError(t, err)
	assert.Equal(t, failed, st.Reason)
	require.NoError(t, c.Resume(ctx, "node1", failed))

	// Nodes the controller does not know.
	assert.ErrorIs(t, c.Drain(ctx, "nosuchnode", ourReason), slurm.ErrNodeNotFound)
	assert.ErrorIs(t, c.SetComment(ctx, "nosuchnode", "x"), slurm.ErrNodeNotFound)
	assert.Error(t, c.Drain(ctx, "node1", ""), "a drain needs a reason")
	assert.Error(t, c.Drain(ctx, "node1,node2", ourReason), "one node at a time")
}

func TestOperatorDrainIsLeftAlone(t *testing.T) {
	t.Parallel()
	s := testenv.StartSlurm(t, testenv.SlurmOptions{})
	s.StartSlurmd(t, "node1")
	c := newClient(s)
	ctx := ctxFor(t, time.Minute)

	const operator = "operator: bad DIMM"
	s.Run(t, "scontrol", "update", "NodeName=node1", "State=DRAIN", "Reason="+operator)

	// Our drain does not overwrite the operator's reason...
	err := c.Drain(ctx, "node1", ourReason)
	require.ErrorIs(t, err, slurm.ErrForeignDrain)
	assert.Contains(t, err.Error(), operator)
	// ...and our resume does not undo their drain.
	err = c.Resume(ctx, "node1", ourReason)
	require.ErrorIs(t, err, slurm.ErrForeignDrain)
	st, err := c.NodeState(ctx, "node1")
	require.NoError(t, err)
	assert.True(t, st.Drained())
	assert.Equal(t, operator, st.Reason)

	// An operator who re-drains a node we drained (new reason) keeps it drained, too.
	s.Run(t, "scontrol", "update", "NodeName=node1", "State=RESUME")
	require.NoError(t, c.Drain(ctx, "node1", ourReason))
	s.Run(t, "scontrol", "update", "NodeName=node1", "State=DRAIN", "Reason="+operator)
	require.ErrorIs(t, c.Resume(ctx, "node1", ourReason), slurm.ErrForeignDrain)
	st, err = c.NodeState(ctx, "node1")
	require.NoError(t, err)
	assert.True(t, st.Drained())
	assert.Equal(t, operator, st.Reason)

	require.ErrorIs(t, c.ReplaceDrain(ctx, "node1", ourReason, "pcs-lifecycle: x exit=1"), slurm.ErrForeignDrain)

	// An operator's DOWN is left alone as well.
	s.Run(t, "scontrol", "update", "NodeName=node1", "State=DOWN", "Reason=operator: down for repair")
	require.ErrorIs(t, c.Drain(ctx, "node1", ourReason), slurm.ErrForeignDrain)
	require.ErrorIs(t, c.Resume(ctx, "node1", ourReason), slurm.ErrForeignDrain)
	st, err = c.NodeState(ctx, "node1")
	require.NoError(t, err)
	assert.Equal(t, "DOWN", st.Base())
	assert.Equal(t, "operator: down for repair", st.Reason)
}

func TestSetComment(t *testing.T) {
	t.Parallel()
	s := testenv.StartSlurm(t, testenv.SlurmOptions{})
	s.StartSlurmd(t, "node1")
	c := newClient(s)
	ctx := ctxFor(t, time.Minute)

	const comment = "pcs-lifecycle: nodeReady/check gpu exit=3"
	require.NoError(t, c.SetComment(ctx, "node1", comment))
	assert.Contains(t, s.Run(t, "scontrol", "show", "node", "node1"), "\n   Comment="+comment+"\n")
	st, err := c.NodeState(ctx, "node1")
	require.NoError(t, err)
	assert.Equal(t, comment, st.Comment)
	assert.Equal(t, []string{"IDLE"}, st.States, "a comment changes no state")

	require.NoError(t, c.SetComment(ctx, "node1", ""))
	assert.NotContains(t, s.Run(t, "scontrol", "show", "node", "node1"), "Comment=")
	assert.Error(t, c.SetComment(ctx, "node1", "two\nlines"))
}

// TestDrainHoldsJobs is the mechanism behind --hold-jobs-until-ready: a job submitted to a
// node we drained stays pending, and runs (as root, proctrack/pgid) once we resume the node.
func TestDrainHoldsJobs(t *testing.T) {
	t.Parallel()
	s := testenv.StartSlurm(t, testenv.SlurmOptions{})
	s.StartSlurmd(t, "node1")
	c := newClient(s)
	ctx := ctxFor(t, 2*time.Minute)

	require.NoError(t, c.Drain(ctx, "node1", ourReason))
	id := s.Sbatch(t, "echo ran as $(id -un) on $SLURMD_NODENAME", "-w", "node1")
	// Once the scheduler has looked at the job, it keeps it pending for the drained node.
	require.Eventually(t, func() bool {
		return strings.Contains(s.Run(t, "squeue", "-h", "-j", id, "-o", "%r"), "ReqNodeNotAvail")
	}, 30*time.Second, 100*time.Millisecond, "the scheduler never gave the drained node as the reason")
	require.Equal(t, "PENDING", s.JobState(t, id), "job ran on a drained node")

	require.NoError(t, c.Resume(ctx, "node1", ourReason))
	state := waitJob(t, s, id, 60*time.Second)
	require.Equal(t, "COMPLETED", state, "slurmd log:\n%s", readFile(s.SlurmdLog("node1")))
	assert.Equal(t, "ran as root on node1\n", s.JobOutput(id))
}

func waitJob(t *testing.T, s *testenv.Slurm, id string, d time.Duration) string {
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

func readFile(p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}

// TestCaptureTestdata rewrites testdata/ from the real daemons when UPDATE_GOLDEN=1; the unit
// tests parse those files. It takes about 100 s: a node must time out to show NOT_RESPONDING, and scontrol retries a
// missing SLURM_CONF for 60 s before it says so.
func TestCaptureTestdata(t *testing.T) {
	if os.Getenv("UPDATE_GOLDEN") != "1" {
		t.Skip("recaptures testdata/ from real daemons only with UPDATE_GOLDEN=1")
	}
	s := testenv.StartSlurm(t, testenv.SlurmOptions{Nodes: []string{"node1", "node2"}, FutureNodes: []string{"node9"}})
	capture := func(file string, env []string, args ...string) {
		t.Helper()
		cmd := s.Command("scontrol", args...)
		if env != nil {
			cmd.Env = env
		}
		out, _ := cmd.CombinedOutput()
		// Not the machine's name nor its kernel: what the tests need is Slurm's format.
		text := regexp.MustCompile(`(?m)^(   OS=).*$`).ReplaceAllString(string(out), "${1}Linux 6.1.0-28-amd64 #1 SMP PREEMPT_DYNAMIC Debian 6.1.119-1 (2024-11-22) ")
		require.NoError(t, os.WriteFile(filepath.Join("testdata", file), []byte(text), 0o644))
	}
	show := []string{"--all", "--future", "show", "node"}
	run := func(args ...string) { s.Run(t, "scontrol", args...) }

	capture("unknown.txt", nil, append(show, "node2")...)
	capture("future.txt", nil, append(show, "node9")...)
	capture("not-found.txt", nil, append(show, "nosuch")...)
	capture("err-update-not-found.txt", nil, "update", "NodeName=nosuch", "State=DRAIN", "Reason=x")
	s.StartSlurmd(t, "node1")
	capture("idle.txt", nil, append(show, "node1")...)
	capture("err-resume-not-drained.txt", nil, "update", "NodeName=node1", "State=RESUME")
	run("update", "NodeName=node1", "Comment=pcs-lifecycle: nodeReady/check gpu exit=3")
	capture("comment.txt", nil, append(show, "node1")...)
	run("update", "NodeName=node1", "Comment=")
	run("update", "NodeName=node1", "State=DRAIN", "Reason="+ourReason)
	capture("drained-ours.txt", nil, append(show, "node1")...)
	run("update", "NodeName=node1", "State=RESUME")
	id := s.Sbatch(t, "sleep 60", "-w", "node1")
	for s.JobState(t, id) != "RUNNING" {
		time.Sleep(100 * time.Millisecond)
	}
	capture("allocated.txt", nil, append(show, "node1")...)
	run("update", "NodeName=node1", "State=DRAIN", "Reason=operator: bad DIMM")
	capture("draining-operator.txt", nil, append(show, "node1")...)
	s.Run(t, "scancel", id)
	for s.JobState(t, id) != "CANCELLED" {
		time.Sleep(100 * time.Millisecond)
	}
	run("update", "NodeName=node1", "State=RESUME")
	s.StopSlurmd(t, "node1")
	for !strings.Contains(s.Run(t, "scontrol", append(show, "node1")...), "State=DOWN+NOT_RESPONDING") {
		time.Sleep(500 * time.Millisecond)
	}
	capture("down-not-responding.txt", nil, append(show, "node1")...)
	for !strings.Contains(s.Run(t, "scontrol", append(show, "node2")...), "State=UNKNOWN+NOT_RESPONDING") {
		time.Sleep(500 * time.Millisecond)
	}
	capture("unknown-not-responding.txt", nil, append(show, "node2")...)

	// Configuration errors. scontrol retries a missing SLURM_CONF for 60 s (which is why the
	// client checks the file first).
	empty := filepath.Join(t.TempDir(), "slurm.conf")
	require.NoError(t, os.WriteFile(empty, nil, 0o644))
	capture("err-empty-conf-file.txt", []string{"PATH=" + s.BinDir, "SLURM_CONF=" + empty}, append(show, "node1")...)
	capture("err-no-conf-file.txt", []string{"PATH=" + s.BinDir, "SLURM_CONF=/nonexistent/slurm.conf"}, append(show, "node1")...)
	conf, err := os.ReadFile(s.Conf)
	require.NoError(t, err)
	deadConf := filepath.Join(t.TempDir(), "slurm.conf")
	require.NoError(t, os.WriteFile(deadConf, regexp.MustCompile(`(?m)^SlurmctldPort=\d+$`).ReplaceAll(conf, []byte("SlurmctldPort=1")), 0o644))
	capture("err-controller-unreachable.txt", []string{"PATH=" + s.BinDir, "SLURM_CONF=" + deadConf}, append(show, "node1")...)
	if _, err := os.Stat("/etc/slurm/slurm.conf"); err == nil {
		t.Log("/etc/slurm/slurm.conf exists: err-configless-failed.txt not recaptured")
	} else {
		capture("err-configless-failed.txt", []string{"PATH=" + s.BinDir}, append(show, "node1")...)
	}
}
