package reliability

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/testenv"
	"github.com/pcs-lifecycle/pcs-lifecycle/pkg/lifecycle"
)

// limitsNode is a node whose one script (CONTINUE) is body, served by the TLS server.
func limitsNode(t *testing.T, name string, policy lifecycle.ExecutionPolicy, body string) (*node, string) {
	t.Helper()
	n := newNode(t, name)
	files := testenv.NewFiles(map[string][]byte{"/s.sh": []byte("#!/bin/sh\n" + body)})
	srv := testenv.StartTLS(t, files)
	n.setenv("SSL_CERT_FILE", srv.CAFile)
	cfg := n.writeConfig(document(lifecycle.CacheOnce, []lifecycle.Script{
		script(name, srv.URL+"/s.sh", policy, lifecycle.Continue)}, nil))
	return n, cfg
}

// measured runs the executor, polling its peak RSS (VmHWM, KiB) while it runs.
func measured(t *testing.T, n *node, args ...string) (result, int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := n.command(ctx, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var hwm int64
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			r := finish(cmd, err, start, &stdout, &stderr)
			if ctx.Err() != nil {
				t.Fatalf("executor did not finish: %s", r)
			}
			// VmHWM of the executor's own memory after exec. The rusage maxrss is no
			// substitute: os/exec starts the child with CLONE_VM|CLONE_VFORK, and the kernel
			// carries the parent's (this test's) high-water mark into the child's at exec.
			if hwm == 0 {
				t.Fatalf("could not read VmHWM of the executor while it ran")
			}
			return r, hwm
		case <-tick.C:
			hwm = max(hwm, vmHWM(cmd.Process.Pid))
		}
	}
}

// TestOutputFlood: a script writes 100 MiB (1 GiB under PCS_RELIABILITY_FULL=1) to stdout.
// Its log keeps the first 16 MiB and says it was truncated; the stage succeeds; the
// executor's peak resident memory stays far below the flood, about what it uses for a quiet
// script.
func TestOutputFlood(t *testing.T) {
	t.Parallel()
	size := int64(count(100, 1024)) << 20
	quiet, qcfg := limitsNode(t, "quiet", lifecycle.EveryBoot, "echo quiet\n")
	rq, quietRSS := measured(t, quiet, "run", "--stage", "nodeBootstrapped", "--config", qcfg)
	if rq.code != 0 {
		t.Fatalf("quiet script: %s", rq)
	}
	n, cfg := limitsNode(t, "flood", lifecycle.EveryBoot,
		fmt.Sprintf("yes 'flood line 0123456789 abcdefghijklmnopqrstuvwxyz' | head -c %d\necho\necho after the flood\n", size))
	r, floodRSS := measured(t, n, "run", "--stage", "nodeBootstrapped", "--config", cfg)
	if r.code != 0 {
		t.Fatalf("flood: %s", r)
	}
	fi, err := os.Stat(n.layout.ScriptLog("nodeBootstrapped", "flood"))
	if err != nil {
		t.Fatal(err)
	}
	const capBytes = 16 << 20
	if fi.Size() < capBytes || fi.Size() > capBytes+4096 {
		t.Errorf("script log is %d bytes, want the 16 MiB cap plus framing", fi.Size())
	}
	log := n.scriptLog("nodeBootstrapped", "flood")
	tail := log[max(0, len(log)-512):]
	if !strings.Contains(tail, "[output truncated after 16777216 bytes]\n[end flood exit=0 @ ") {
		t.Errorf("the log does not end with the truncation note and the end line: %q", tail)
	}
	if !strings.HasPrefix(log, "[start flood args=[] @ ") {
		t.Errorf("the log does not start with the start line")
	}
	if !n.logHas("WARN", "flood", `"output_bytes":\d{9,}`) {
		t.Errorf("executor.log does not report the flood's size")
	}
	// Bounded: the flood must not be buffered. 64 MiB is several times a quiet run's peak
	// and far below the flood.
	const bound = 64 << 10 // KiB
	if floodRSS > bound || floodRSS-quietRSS > 32<<10 {
		t.Errorf("executor peak RSS %d KiB under a %d MiB flood (quiet script: %d KiB)", floodRSS, size>>20, quietRSS)
	}
	report(t, "output-flood", map[string]any{"flood_mib": size >> 20, "peak_rss_kib": floodRSS, "quiet_peak_rss_kib": quietRSS,
		"stage_ms": r.elapsed.Milliseconds(), "log_bytes": fi.Size(),
		"mib_per_s": float64(size>>20) / r.elapsed.Seconds()})
}

// TestForkMany: a script that leaves many children holding its stdout does not keep the
// executor past a few seconds after its own exit; with a script timeout, the whole group of
// a script that waits for its children dies.
func TestForkMany(t *testing.T) {
	t.Parallel()
	children := count(200, 1000)
	forker := fmt.Sprintf("i=0\nwhile [ $i -lt %d ]; do sleep 300 & i=$((i+1)); done\necho forked $i\n", children)
	t.Run("leaves-them-running", func(t *testing.T) {
		t.Parallel()
		n, cfg := limitsNode(t, "forker", lifecycle.EveryBoot, forker+"exit 0\n")
		t.Cleanup(func() { killScripts(t, n.instance) })
		r := n.run("run", "--stage", "nodeBootstrapped", "--config", cfg)
		if r.code != 0 {
			t.Fatalf("forker: %s", r)
		}
		alive := len(processesOf(n.instance))
		if alive < children/2 {
			t.Errorf("only %d of %d children still run: the executor killed a script's daemons", alive, children)
		}
		log := n.scriptLog("nodeBootstrapped", "forker")
		if !strings.Contains(log, fmt.Sprintf("forked %d\n", children)) || !strings.Contains(log, "[end forker exit=0 @ ") {
			t.Errorf("log: %s", log)
		}
		// The script's own run is well under a second or two; the executor may wait 2 s for
		// the pipe its children hold.
		if r.elapsed > 15*time.Second {
			t.Errorf("the executor waited %s for a script's children", r.elapsed)
		}
		report(t, "fork-many", map[string]any{"children": children, "stage_ms": r.elapsed.Milliseconds(), "children_left_running": alive})
	})
	t.Run("group-killed-on-timeout", func(t *testing.T) {
		t.Parallel()
		n, cfg := limitsNode(t, "waiter", lifecycle.EveryBoot, forker+"wait\n")
		t.Cleanup(func() { killScripts(t, n.instance) })
		r := n.run("run", "--stage", "nodeBootstrapped", "--config", cfg, "--script-timeout", "3s")
		if r.code != 3 {
			t.Fatalf("timed-out forker under CONTINUE: want exit 3: %s", r)
		}
		// SIGKILL went to the group before the run returned; its delivery is asynchronous.
		for deadline := time.Now().Add(10 * time.Second); len(processesOf(n.instance)) > 0 && time.Now().Before(deadline); {
			time.Sleep(20 * time.Millisecond) // polling /proc until the group is gone
		}
		if left := processesOf(n.instance); len(left) > 0 {
			t.Errorf("%d processes of the timed-out script survive", len(left))
		}
		if sc := findScript(t, n.status(), "nodeBootstrapped", "waiter"); sc.LastResult != "failed" {
			t.Errorf("last result %q, want failed", sc.LastResult)
		}
		report(t, "fork-many-timeout", map[string]any{"children": children, "stage_ms": r.elapsed.Milliseconds()})
	})
}

// TestIgnoresSIGTERM: a script (and its children) ignoring SIGTERM is SIGKILLed 10 s after
// the SIGTERM of its timeout, and of the executor's own SIGTERM; the run ends, nothing
// survives, and an interrupted FIRST_BOOT_ONLY script runs again.
func TestIgnoresSIGTERM(t *testing.T) {
	t.Parallel()
	stubborn := "trap '' TERM\necho ignoring TERM\nwhile :; do sleep 0.2; done\n"
	t.Run("script-timeout", func(t *testing.T) {
		t.Parallel()
		n, cfg := limitsNode(t, "stubborn", lifecycle.EveryBoot, stubborn)
		r := n.run("run", "--stage", "nodeBootstrapped", "--config", cfg, "--script-timeout", "1s")
		if r.code != 3 {
			t.Fatalf("want exit 3 (CONTINUE): %s", r)
		}
		if r.elapsed < 10*time.Second || r.elapsed > 30*time.Second {
			t.Errorf("took %s: want the 1 s timeout plus the 10 s grace", r.elapsed)
		}
		if !strings.Contains(n.scriptLog("nodeBootstrapped", "stubborn"), "[end stubborn exit=signal:KILL @ ") {
			t.Errorf("log: %s", n.scriptLog("nodeBootstrapped", "stubborn"))
		}
		if left := processesOf(n.instance); len(left) > 0 {
			t.Errorf("%d processes survive", len(left))
		}
		report(t, "ignores-sigterm-timeout", map[string]any{"stage_ms": r.elapsed.Milliseconds()})
	})
	t.Run("executor-sigterm", func(t *testing.T) {
		t.Parallel()
		first := filepath.Join(t.TempDir(), "first-run")
		body := "if [ ! -e " + shellQuote(first) + " ]; then touch " + shellQuote(first) + "; " + stubborn + "fi\necho second run\n"
		n, cfg := limitsNode(t, "stubborn", lifecycle.FirstBootOnly, body)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		var stdout, stderr bytes.Buffer
		cmd := n.command(ctx, "run", "--stage", "nodeBootstrapped", "--config", cfg)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		start := time.Now()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		for !strings.Contains(n.scriptLog("nodeBootstrapped", "stubborn"), "ignoring TERM") {
			select {
			case err := <-done:
				t.Fatalf("ended early: %s", finish(cmd, err, start, &stdout, &stderr))
			case <-time.After(10 * time.Millisecond):
			}
		}
		termAt := time.Now()
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		r := finish(cmd, <-done, start, &stdout, &stderr)
		took := time.Since(termAt)
		if r.code != 143 {
			t.Fatalf("SIGTERM: want exit 143: %s", r)
		}
		if took < 9*time.Second || took > 30*time.Second {
			t.Errorf("exit %s after SIGTERM: want the 10 s grace", took)
		}
		if left := processesOf(n.instance); len(left) > 0 {
			t.Errorf("%d processes survive", len(left))
		}
		d := n.status()
		if s := findStage(d, "nodeBootstrapped"); s.Status != "interrupted" {
			t.Errorf("stage after SIGTERM: %q, want interrupted", s.Status)
		}
		r2 := n.run("run", "--stage", "nodeBootstrapped")
		if r2.code != 0 || !strings.Contains(n.scriptLog("nodeBootstrapped", "stubborn"), "second run") {
			t.Errorf("the interrupted script did not run again: %s", r2)
		}
		report(t, "ignores-sigterm-executor", map[string]any{"exit_after_sigterm_ms": took.Milliseconds()})
	})
}

// TestClosesStdoutEarly: a script that closes stdout and stderr and keeps working is waited
// for to its exit (the pipe's EOF is not its end), and a script doing so forever is ended by
// its timeout.
func TestClosesStdoutEarly(t *testing.T) {
	t.Parallel()
	t.Run("keeps-working", func(t *testing.T) {
		t.Parallel()
		mark := filepath.Join(t.TempDir(), "finished")
		n, cfg := limitsNode(t, "closer", lifecycle.EveryBoot,
			"echo before closing\nexec >&- 2>&-\nsleep 2\necho done > "+shellQuote(mark)+"\n")
		r := n.run("run", "--stage", "nodeBootstrapped", "--config", cfg)
		if r.code != 0 {
			t.Fatalf("closer: %s", r)
		}
		if _, err := os.Stat(mark); err != nil {
			t.Errorf("the executor returned before the script finished: %v", err)
		}
		log := n.scriptLog("nodeBootstrapped", "closer")
		if !strings.Contains(log, "before closing\n[end closer exit=0 @ ") {
			t.Errorf("log: %q", log)
		}
		if sc := findScript(t, n.status(), "nodeBootstrapped", "closer"); sc.DurationMS == nil || *sc.DurationMS < 1900 {
			t.Errorf("recorded duration %v: the script's run is its process's life, not its pipe's", sc.DurationMS)
		}
	})
	t.Run("forever-with-timeout", func(t *testing.T) {
		t.Parallel()
		n, cfg := limitsNode(t, "closer", lifecycle.EveryBoot, "exec >&- 2>&-\nwhile :; do sleep 0.2; done\n")
		r := n.run("run", "--stage", "nodeBootstrapped", "--config", cfg, "--script-timeout", "1s")
		if r.code != 3 {
			t.Fatalf("want exit 3: %s", r)
		}
		if r.elapsed > 8*time.Second {
			t.Errorf("took %s for a 1 s timeout of a script that obeys SIGTERM", r.elapsed)
		}
		if !strings.Contains(n.scriptLog("nodeBootstrapped", "closer"), "[end closer exit=signal:TERM @ ") {
			t.Errorf("log: %s", n.scriptLog("nodeBootstrapped", "closer"))
		}
		if left := processesOf(n.instance); len(left) > 0 {
			t.Errorf("%d processes survive", len(left))
		}
	})
}
