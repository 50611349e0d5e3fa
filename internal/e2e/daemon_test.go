package e2e_test

// `pcs-lifecycle daemon` as systemd runs it (Type=notify): a real NOTIFY_SOCKET datagram
// socket (notifytest) receives what it tells systemd, and a real slurmd is started when
// READY=1 arrives, as slurmd.service ordered after pcs-lifecycle.service would be.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/notify/notifytest"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/slurm"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/testenv"
)

// notifyLine is one line of one datagram, with when it arrived.
type notifyLine struct {
	text string
	at   time.Time
}

func notifyLines(sock *notifytest.Socket) []notifyLine {
	var out []notifyLine
	for _, m := range sock.Messages() {
		for _, l := range m.Lines {
			out = append(out, notifyLine{l, m.At})
		}
	}
	return out
}

// indexOf is the index of the first line equal to text (-1 when none).
func indexOf(lines []notifyLine, text string) int {
	for i, l := range lines {
		if l.text == text {
			return i
		}
	}
	return -1
}

func dumpNotify(lines []notifyLine) string {
	var b strings.Builder
	for _, l := range lines {
		fmt.Fprintf(&b, "%s %s\n", l.at.Format("15:04:05.000000"), l.text)
	}
	return b.String()
}

// TestDaemonNotify: READY=1 only after the last nodeBootstrapped script ended; STATUS= names
// each script; EXTEND_TIMEOUT_USEC= keeps coming while a long script runs; then, with slurmd
// started at READY=1, nodeReady runs once the node registered; exit 0 without STOPPING=1 (which
// would keep systemd from applying RemainAfterExit=yes).
func TestDaemonNotify(t *testing.T) {
	t.Parallel()
	b := newBucket(t)
	n := newNode(t)
	s := startCluster(t, []*node{n}, testenv.SlurmOptions{})
	sock := notifytest.Listen(t)
	n.env["NOTIFY_SOCKET"] = sock.Path
	marks := t.TempDir()
	long := sh(fmt.Sprintf("date +%%s%%N > %s\nsleep 2.5\ndate +%%s%%N > %s",
		shellQuote(filepath.Join(marks, "long.start")), shellQuote(filepath.Join(marks, "long.end"))))
	cfg := n.writeConfig(stages(
		[]scriptDef{
			script("prepare", b.put(t, "prepare.sh", okScript("prepared"))),
			script("long-setup", b.put(t, "long.sh", long)),
		},
		[]scriptDef{script("show-node", b.put(t, "show-node.sh", showNodeScript("", "", "")))},
	))
	p := n.start("daemon", append([]string{"--config", cfg, "--extend-timeout", "3s"}, slurmArgs(s)...)...)

	_, ok := sock.WaitFor("READY=1", 60*time.Second)
	require.True(t, ok, "no READY=1; daemon: %s\nnotifications:\n%s", p.report(), dumpNotify(notifyLines(sock)))
	readyAt := time.Now()
	require.False(t, p.exited(), "the daemon exited before the node registered: %s", p.report())
	require.NoFileExists(t, n.scriptLogPath(ready, "show-node"), "nodeReady ran before slurmd started")
	// slurmd.service, ordered after the daemon's unit, starts now.
	s.StartSlurmd(t, n.name)
	r := p.wait(t, 60*time.Second)
	require.Equal(t, 0, r.code, "%s", r)
	_, ok = sock.WaitFor("STATUS=done: exit 0", 5*time.Second)
	require.True(t, ok, "no final STATUS=:\n%s", dumpNotify(notifyLines(sock)))

	lines := notifyLines(sock)
	dump := dumpNotify(lines)
	longStart := mark(t, filepath.Join(marks, "long.start"))
	longEnd := mark(t, filepath.Join(marks, "long.end"))
	iReady := indexOf(lines, "READY=1")
	require.GreaterOrEqual(t, iReady, 0)
	require.Equal(t, 1, countLines(lines, "READY=1"), "READY=1 sent once:\n%s", dump)
	require.False(t, lines[iReady].at.Before(longEnd), "READY=1 at %s, before the last nodeBootstrapped script ended at %s:\n%s",
		lines[iReady].at.Format(time.RFC3339Nano), longEnd.Format(time.RFC3339Nano), dump)
	require.True(t, readyAt.After(longEnd))

	// STATUS= names each script as it runs, the bootstrapped ones before READY=1.
	for _, st := range []string{"STATUS=nodeBootstrapped/prepare", "STATUS=nodeBootstrapped/long-setup"} {
		i := indexOf(lines, st)
		require.GreaterOrEqual(t, i, 0, "%s missing:\n%s", st, dump)
		require.Less(t, i, iReady, "%s after READY=1:\n%s", st, dump)
	}
	require.Less(t, indexOf(lines, "STATUS=nodeBootstrapped/prepare"), indexOf(lines, "STATUS=nodeBootstrapped/long-setup"))
	iReadyScript := indexOf(lines, "STATUS=nodeReady/show-node")
	require.Greater(t, iReadyScript, iReady, "nodeReady's STATUS after READY=1:\n%s", dump)
	iWait := indexOf(lines, "STATUS=waiting for Slurm registration of "+n.name)
	require.Greater(t, iWait, iReady, "the registration wait shows in STATUS after READY=1:\n%s", dump)
	require.Less(t, iWait, iReadyScript)

	// EXTEND_TIMEOUT_USEC= keeps coming while the 2.5 s script runs (every third of 3 s; the
	// period itself is pinned with a fake clock in internal/boot's TestExtendTimeoutUntilReady).
	during := 0
	for _, l := range lines {
		if strings.HasPrefix(l.text, "EXTEND_TIMEOUT_USEC=") {
			require.Equal(t, "EXTEND_TIMEOUT_USEC=3000000", l.text)
			if l.at.After(longStart) && l.at.Before(longEnd) {
				during++
			}
		}
	}
	require.GreaterOrEqual(t, during, 1, "EXTEND_TIMEOUT_USEC= during the long script (%s to %s):\n%s",
		longStart.Format(time.RFC3339Nano), longEnd.Format(time.RFC3339Nano), dump)

	// The final status is the last word; never STOPPING=1.
	require.Equal(t, "STATUS=done: exit 0", lines[len(lines)-1].text, dump)
	require.Zero(t, countLines(lines, "STOPPING=1"), dump)

	// nodeReady ran after the registration, with scontrol working.
	st := n.shownState(ready, "show-node")
	require.True(t, slurm.Registered(st), "%s", st)
	require.Equal(t, "IDLE", st.Base())
	reg := n.logIndex("message", "node registered with Slurm", "node", n.name)
	require.GreaterOrEqual(t, reg, 0)
	require.Greater(t, n.logIndex("message", "starting script", "script", "show-node"), reg)
	for _, name := range []string{"prepare", "long-setup"} {
		rs := n.runs(bootstrapped, name)
		require.Len(t, rs, 1)
		require.Equal(t, "0", rs[0].exit)
	}
}

func countLines(lines []notifyLine, text string) int {
	c := 0
	for _, l := range lines {
		if l.text == text {
			c++
		}
	}
	return c
}

// TestDaemonTerminate: a TERMINATE failure in nodeBootstrapped: exit 4, no READY=1 ever (so
// slurmd, which requires it, never starts), the summary (script, exit code, the last 20 lines
// of its log) on the console, and the --on-terminate command run.
func TestDaemonTerminate(t *testing.T) {
	t.Parallel()
	b := newBucket(t)
	n := newNode(t, withEnv("SLURM_CONF", "/nonexistent/slurm.conf"))
	sock := notifytest.Listen(t)
	n.env["NOTIFY_SOCKET"] = sock.Path
	tmp := t.TempDir()
	console := filepath.Join(tmp, "console")
	touched := filepath.Join(tmp, "terminated")
	var chatty strings.Builder
	for i := 1; i <= 25; i++ {
		fmt.Fprintf(&chatty, "echo line-%02d\n", i)
	}
	chatty.WriteString("exit 9")
	cfg := n.writeConfig(stages(
		[]scriptDef{
			script("chatty-fail", b.put(t, "chatty.sh", sh(chatty.String()))).onErr("TERMINATE"),
			script("never", b.put(t, "never.sh", okScript("never"))),
		},
		[]scriptDef{script("never-ready", b.put(t, "never-ready.sh", okScript("never")))},
	))
	r := n.run("daemon", "--config", cfg, "--console", console, "--on-terminate", "command:touch "+shellQuote(touched),
		"--registration-timeout", "5s", "--registration-poll", "200ms")
	require.Equal(t, 4, r.code, "%s", r)
	_, ok := sock.WaitFor("STATUS=TERMINATE", 5*time.Second)
	require.True(t, ok, "no TERMINATE status:\n%s", dumpNotify(notifyLines(sock)))
	_, ok = sock.WaitFor("READY=1", 500*time.Millisecond)
	require.False(t, ok, "READY=1 sent after a TERMINATE:\n%s", dumpNotify(notifyLines(sock)))
	require.GreaterOrEqual(t, indexOf(notifyLines(sock), "STATUS=nodeBootstrapped/chatty-fail"), 0)

	data, err := os.ReadFile(console)
	require.NoError(t, err, "no console summary")
	summary := string(data)
	require.Contains(t, summary, "TERMINATE")
	require.Contains(t, summary, "nodeBootstrapped/chatty-fail exit=9")
	require.Contains(t, summary, "line-25")
	require.Contains(t, summary, "line-07")
	require.Contains(t, summary, "[end chatty-fail exit=9")
	require.NotContains(t, summary, "line-06", "more than the last 20 lines of the log")
	require.Contains(t, r.stderr, "nodeBootstrapped/chatty-fail exit=9", "the summary goes to the journal too")
	require.Contains(t, r.stderr, "pcs-lifecycle: TERMINATE: nodeBootstrapped/chatty-fail exit=9\n")
	require.NotContains(t, summary, "TERMINATE: pcs-lifecycle:", "one prefix per line")
	n.requireLog("level", "ERROR", "message", "TERMINATE: the node must be replaced; summary written to the journal (stderr) and "+console)
	require.FileExists(t, touched, "--on-terminate command did not run")
	n.requireLog("message", "on-terminate action done")

	require.NoFileExists(t, n.scriptLogPath(bootstrapped, "never"))
	require.NoFileExists(t, n.scriptLogPath(ready, "never-ready"))
	require.Empty(t, n.find("message~", "registration"), "the daemon waited for Slurm after a TERMINATE")
}

// TestDaemonInvalidConfig: an invalid configuration (or usage) makes the daemon exit 2
// without READY=1.
func TestDaemonInvalidConfig(t *testing.T) {
	t.Parallel()
	n := newNode(t, withEnv("SLURM_CONF", "/nonexistent/slurm.conf"))
	sock := notifytest.Listen(t)
	n.env["NOTIFY_SOCKET"] = sock.Path
	bad := n.writeFile("bad.json", []byte(`{"stages": {"nodeBootstrapped": [{"name": "x",
		"scriptSource": {"scriptLocation": "s3://bucket/x.sh"}, "executionPolicies": "EVERY_BOOT"}]}}`))
	r := n.run("daemon", "--config", bad)
	require.Equal(t, 2, r.code, "%s", r)
	require.Contains(t, r.stderr, "stages.nodeBootstrapped[0]")
	r = n.run("daemon", "--config", bad, "--on-terminate", "reboot-please")
	require.Equal(t, 2, r.code, "%s", r)
	_, ok := sock.WaitFor("READY=1", time.Second)
	require.False(t, ok, "READY=1 sent with an invalid configuration:\n%s", dumpNotify(notifyLines(sock)))
}

// TestDaemonContinueFailure: a CONTINUE failure in nodeBootstrapped does not keep slurmd down:
// READY=1 is sent, nodeReady runs after the registration, the daemon exits 3 (the node carries
// on) and the node's Comment names the failed script — also when nodeReady has no scripts of
// its own (the Comment is the only place `scontrol show node` shows it).
func TestDaemonContinueFailure(t *testing.T) {
	t.Parallel()
	b := newBucket(t)
	withReady, bootOnly := newNode(t), newNode(t)
	s := startCluster(t, []*node{withReady, bootOnly}, testenv.SlurmOptions{})
	failLoc := b.put(t, "fail.sh", failScript(7))
	cases := []struct {
		name  string
		n     *node
		ready []scriptDef
	}{
		{name: "with nodeReady scripts", n: withReady, ready: []scriptDef{script("show-node", b.put(t, "show-node.sh", showNodeScript("", "", "")))}},
		{name: "without nodeReady scripts", n: bootOnly},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			n := tc.n.with(t)
			sock := notifytest.Listen(t)
			n.env["NOTIFY_SOCKET"] = sock.Path
			cfg := n.writeConfig(stages([]scriptDef{
				script("bad-boot", failLoc).onErr("CONTINUE"),
				script("after", b.put(t, "after.sh", okScript("after"))),
			}, tc.ready))
			p := n.start("daemon", append([]string{"--config", cfg, "--drain-on-failure"}, slurmArgs(s)...)...)
			_, ok := sock.WaitFor("READY=1", 60*time.Second)
			require.True(t, ok, "no READY=1 after a CONTINUE failure; daemon: %s\nnotifications:\n%s", p.report(), dumpNotify(notifyLines(sock)))
			s.StartSlurmd(t, n.name)
			r := p.wait(t, 60*time.Second)
			require.Equal(t, 3, r.code, "%s", r)
			_, ok = sock.WaitFor("STATUS=done: exit 3", 5*time.Second)
			require.True(t, ok, "no final STATUS=:\n%s", dumpNotify(notifyLines(sock)))
			require.Zero(t, countLines(notifyLines(sock), "STOPPING=1"), "STOPPING=1 keeps RemainAfterExit= from applying")
			require.Len(t, n.runs(bootstrapped, "after"), 1)
			if len(tc.ready) > 0 {
				require.True(t, slurm.Registered(n.shownState(ready, "show-node")))
			}
			const want = "pcs-lifecycle: nodeBootstrapped/bad-boot exit=7"
			st := nodeState(t, s, n.name)
			require.Equal(t, want, st.Comment, "the node's Comment does not show the failure")
			require.True(t, st.Drained(), "--drain-on-failure: %s", st)
			require.Equal(t, want, st.Reason)
		})
	}
}

// TestDaemonRegistration: after READY=1 the daemon waits for the registration: past
// --registration-timeout it exits 1 with no nodeReady script run; SIGTERM during the wait ends
// it with 143.
func TestDaemonRegistration(t *testing.T) {
	t.Parallel()
	b := newBucket(t)
	timesOut, interrupted := newNode(t), newNode(t)
	s := startCluster(t, []*node{timesOut, interrupted}, testenv.SlurmOptions{})
	doc := stages(
		[]scriptDef{script("boot", b.put(t, "boot.sh", okScript("booted")))},
		[]scriptDef{script("never", b.put(t, "never.sh", okScript("never")))},
	)
	t.Run("timeout", func(t *testing.T) {
		t.Parallel()
		n := timesOut.with(t)
		sock := notifytest.Listen(t)
		n.env["NOTIFY_SOCKET"] = sock.Path
		r := n.run("daemon", "--config", n.writeConfig(doc), "--scontrol", s.Scontrol,
			"--registration-poll", "200ms", "--registration-timeout", "2s")
		require.Equal(t, 1, r.code, "%s", r)
		require.Contains(t, r.stderr, "within 2s (--registration-timeout)")
		_, ok := sock.WaitFor("READY=1", 5*time.Second)
		require.True(t, ok, "nodeBootstrapped succeeded: READY=1 is due")
		n.requireLog("level", "ERROR", "message~", "did not register", "stage", ready)
		require.NoFileExists(t, n.scriptLogPath(ready, "never"))
		require.Len(t, n.runs(bootstrapped, "boot"), 1)
	})
	t.Run("SIGTERM", func(t *testing.T) {
		t.Parallel()
		n := interrupted.with(t)
		sock := notifytest.Listen(t)
		n.env["NOTIFY_SOCKET"] = sock.Path
		p := n.start("daemon", append([]string{"--config", n.writeConfig(doc)}, slurmArgs(s)...)...)
		_, ok := sock.WaitFor("STATUS=waiting for Slurm registration", 60*time.Second)
		require.True(t, ok, "no registration wait:\n%s", dumpNotify(notifyLines(sock)))
		require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
		r := p.wait(t, 20*time.Second)
		require.Equal(t, 143, r.code, "%s", r)
		require.NoFileExists(t, n.scriptLogPath(ready, "never"))
	})
}
