package reliability

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pcs-lifecycle/pcs-lifecycle/pkg/lifecycle"
)

// TestConcurrentRuns starts several executors at once on one node — the two stages, several
// times each, as a misconfigured boot or an impatient operator might — on a first boot and
// then on a reboot. Each script runs exactly once per boot as its policy says; every executor
// ends with the stage's result; nobody deadlocks.
func TestConcurrentRuns(t *testing.T) {
	t.Parallel()
	rounds := count(4, 40)
	const perStage = 4
	var launched, maxWait int64
	for round := 0; round < rounds; round++ {
		n := newNode(t, "concurrent")
		marker := filepath.Join(n.work, "markers")
		body := markerScript(marker, "sleep 0.1")
		srv, bucket := s3Scripts(t, map[string][]byte{"c.sh": body})
		n.useS3(srv.Endpoint)
		loc := "s3://" + bucket + "/c.sh"
		cfg := n.writeConfig(document(lifecycle.CacheOnce,
			[]lifecycle.Script{
				script("boot-first", loc, lifecycle.FirstBootOnly, lifecycle.Continue),
				script("boot-every", loc, lifecycle.EveryBoot, lifecycle.Continue),
			},
			[]lifecycle.Script{
				script("ready-first", loc, lifecycle.FirstBootOnly, lifecycle.Continue),
				script("ready-every", loc, lifecycle.EveryBoot, lifecycle.Continue),
			}))
		for boot := 1; boot <= 2; boot++ {
			before := readMarkers(marker)
			var wg sync.WaitGroup
			var mu sync.Mutex
			var results []result
			for i := 0; i < 2*perStage; i++ {
				stage := lifecycle.Stages[i%2]
				wg.Add(1)
				go func() {
					defer wg.Done()
					r := n.run("run", "--stage", stage, "--config", cfg, "--lock-timeout", "2m")
					mu.Lock()
					results = append(results, r)
					mu.Unlock()
				}()
			}
			wg.Wait()
			launched += 2 * perStage
			for _, r := range results {
				if r.code != 0 {
					t.Errorf("round %d boot %d: %s", round, boot, r)
				}
				maxWait = max(maxWait, r.elapsed.Milliseconds())
			}
			after := readMarkers(marker)
			for _, name := range []string{"boot-first", "boot-every", "ready-first", "ready-every"} {
				want := 1
				if boot > 1 && strings.HasSuffix(name, "-first") {
					want = 0
				}
				if s, e := after.starts[name]-before.starts[name], after.ends[name]-before.ends[name]; s != want || e != want {
					t.Errorf("round %d boot %d: %s started %d and ended %d times, want %d", round, boot, name, s, e, want)
				}
			}
			n.reboot()
		}
		if t.Failed() {
			return
		}
	}
	report(t, "concurrent-runs", map[string]any{"rounds": rounds, "executors_launched": launched,
		"slowest_executor_ms": maxWait})
}

// TestStatusDuringRun: while a script runs, status (text and JSON), plan and wait answer at
// once without the lock and show the running script; a second run gives up after
// --lock-timeout with exit 1 naming the holder.
func TestStatusDuringRun(t *testing.T) {
	t.Parallel()
	n := newNode(t, "status")
	marker := filepath.Join(n.work, "markers")
	release := filepath.Join(n.work, "release")
	hold := markerScript(marker, "while [ ! -e "+shellQuote(release)+" ]; do sleep 0.01; done")
	srv, bucket := s3Scripts(t, map[string][]byte{"hold.sh": hold})
	n.useS3(srv.Endpoint)
	cfg := n.writeConfig(document(lifecycle.CacheOnce, []lifecycle.Script{
		script("hold", "s3://"+bucket+"/hold.sh", lifecycle.FirstBootOnly, lifecycle.Terminate)}, nil))

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := n.command(ctx, "run", "--stage", "nodeBootstrapped", "--config", cfg)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan result, 1)
	go func() { err := cmd.Wait(); done <- finish(cmd, err, start, &stdout, &stderr) }()
	defer func() { _ = os.WriteFile(release, nil, 0o644) }()
	for readMarkers(marker).starts["hold"] == 0 {
		select {
		case r := <-done:
			t.Fatalf("run ended before its script started: %s", r)
		case <-time.After(5 * time.Millisecond):
		}
	}

	const polls = 20
	var slowest time.Duration
	for i := 0; i < polls; i++ {
		t0 := time.Now()
		d := n.status()
		slowest = max(slowest, time.Since(t0))
		if !d.Running || !strings.Contains(d.Holder, "run --stage nodeBootstrapped") {
			t.Fatalf("status during a run: running=%v holder=%q", d.Running, d.Holder)
		}
		if s := findStage(d, "nodeBootstrapped"); s.Status != "running" {
			t.Fatalf("stage status %q, want running", s.Status)
		}
		if sc := findScript(t, d, "nodeBootstrapped", "hold"); sc.ThisBoot != "running" {
			t.Fatalf("script this boot %q, want running", sc.ThisBoot)
		}
		if d.ExitCode != 3 {
			t.Fatalf("status exit %d during a run, want 3", d.ExitCode)
		}
	}
	text := n.runWithin(10*time.Second, "status")
	if text.code != 3 || !strings.Contains(text.stdout, "running now:") || !strings.Contains(text.stdout, "hold") {
		t.Errorf("text status during a run: %s", text)
	}
	if p := n.runWithin(10*time.Second, "plan"); p.code != 0 {
		t.Errorf("plan during a run: %s", p)
	}
	second := n.runWithin(30*time.Second, "run", "--stage", "nodeBootstrapped", "--lock-timeout", "300ms")
	if second.code != 1 || !strings.Contains(second.stderr, "run --stage nodeBootstrapped") || !strings.Contains(second.stderr, "pid ") {
		t.Errorf("a second run while the lock is held: want exit 1 naming the holder: %s", second)
	}
	if second.elapsed > 10*time.Second {
		t.Errorf("--lock-timeout 300ms took %s", second.elapsed)
	}
	// wait blocks until the stage ends, then exits with its result.
	waitDone := make(chan result, 1)
	go func() {
		waitDone <- n.runWithin(time.Minute, "wait", "--stage", "nodeBootstrapped", "--interval", "20ms")
	}()
	select {
	case r := <-waitDone:
		t.Fatalf("wait returned while the stage runs: %s", r)
	case <-time.After(300 * time.Millisecond):
	}
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if r := <-done; r.code != 0 {
		t.Fatalf("run: %s", r)
	}
	if r := <-waitDone; r.code != 0 {
		t.Errorf("wait after the stage succeeded: %s", r)
	}
	d := n.status()
	if d.Running || d.ExitCode != 0 || findStage(d, "nodeBootstrapped").Status != "succeeded" {
		t.Errorf("status after the run: %+v", d)
	}
	report(t, "status-during-run", map[string]any{"status_calls": polls, "slowest_status_ms": slowest.Milliseconds(),
		"second_run_exit": second.code, "second_run_ms": second.elapsed.Milliseconds()})
}
