package reliability

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/state"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/testenv"
	"github.com/pcs-lifecycle/pcs-lifecycle/pkg/lifecycle"
)

// Where a kill -9 is aimed.
const (
	aimDownload = "download"    // while the proxy is serving a script to the executor
	aimScript   = "script"      // while a script runs
	aimState    = "state-write" // right when state.json's temp file or the journal is written
	aimRandom   = "random"      // 0–50 ms after the start
)

var aims = []string{aimDownload, aimScript, aimState, aimRandom}

// crashStats is what the crash loop did.
type crashStats struct {
	nodes, runs, kills, cleanRuns, reboots int
	landed                                 map[string]int // where kills landed
	reRuns                                 int            // interrupted scripts that ran again
	leftoverTemps                          int
}

// TestCrashConsistency kill -9s the executor (and, as a power loss would, its scripts) at
// random moments aimed at downloads, script runs and state writes, on many sandbox nodes
// through several boots each. After every kill: status loads the state and reports no stage
// running; no script that finished in this boot runs again in it; no FIRST_BOOT_ONLY script
// that finished on the instance ever runs again; and by the node's last boot every
// FIRST_BOOT_ONLY script has finished, those interrupted included.
func TestCrashConsistency(t *testing.T) {
	t.Parallel()
	target := count(60, 500)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 42))
	srv := testenv.SharedS3(t)
	bucket := srv.NewBucket(t)
	// Scripts are dripped (64 bytes every 4 ms) so that a download lasts long enough to be
	// hit; the bodies are whole, this is no fault.
	p := testenv.StartFaultProxy(t, testenv.FaultOptions{Upstream: strings.TrimPrefix(srv.Endpoint, "http://"),
		DripChunk: 64, DripEvery: 4 * time.Millisecond})
	p.Inject("/", testenv.Drip)

	st := crashStats{landed: map[string]int{}}
	for st.kills < target {
		crashNode(t, rng, srv, bucket, p, &st, st.nodes%2 == 1)
		st.nodes++
		if t.Failed() {
			break
		}
	}
	if st.landed[aimScript] == 0 || st.landed[aimState] == 0 {
		t.Errorf("kills never landed in some phase: %v", st.landed)
	}
	report(t, "crash-consistency", map[string]any{"nodes": st.nodes, "executor_runs": st.runs, "kills": st.kills,
		"landed": st.landed, "clean_runs": st.cleanRuns, "reboots": st.reboots, "interrupted_scripts_rerun": st.reRuns,
		"leftover_temp_files": st.leftoverTemps})
}

type crashScript struct {
	stage  string
	s      lifecycle.Script
	firstB bool
}

func crashNode(t *testing.T, rng *rand.Rand, srv *testenv.S3Server, bucket string, p *testenv.FaultProxy, st *crashStats, refresh bool) {
	n := newNode(t, "crash")
	n.useS3(p.URL)
	marker := filepath.Join(n.work, "markers")
	// Each script writes "start", sleeps 20 ms, writes "end".
	body := markerScript(marker, "sleep 0.02")
	key := "crash/" + n.instance + ".sh"
	srv.Put(t, bucket, key, body)
	loc := "s3://" + bucket + "/" + key
	caching := lifecycle.CacheOnce
	if refresh {
		caching = lifecycle.RefreshOnReboot
	}
	scripts := []crashScript{
		{lifecycle.StageNodeBootstrapped, script("fb-1", loc, lifecycle.FirstBootOnly, lifecycle.Continue), true},
		{lifecycle.StageNodeBootstrapped, script("every-1", loc, lifecycle.EveryBoot, lifecycle.Continue), false},
		{lifecycle.StageNodeBootstrapped, script("fb-2", loc, lifecycle.FirstBootOnly, lifecycle.Continue), true},
		{lifecycle.StageNodeBootstrapped, script("fb-3", loc, lifecycle.FirstBootOnly, lifecycle.Continue), true},
		{lifecycle.StageNodeReady, script("fb-r", loc, lifecycle.FirstBootOnly, lifecycle.Continue), true},
		{lifecycle.StageNodeReady, script("every-r", loc, lifecycle.EveryBoot, lifecycle.Continue), false},
	}
	var boot, ready []lifecycle.Script
	for _, c := range scripts {
		if c.stage == lifecycle.StageNodeBootstrapped {
			boot = append(boot, c.s)
		} else {
			ready = append(ready, c.s)
		}
	}
	cfg := n.writeConfig(document(caching, boot, ready))
	for _, d := range []string{n.layout.StateDir()} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}

	maxKills := 1 + rng.IntN(4)
	kills := 0
	finished := map[string]bool{}     // FIRST_BOOT_ONLY scripts that ended on the instance
	doneThisBoot := map[string]bool{} // stage/name that ended in the current boot
	pendingRerun := map[string]bool{} // started, killed before it ended: owed a run
	stageIdx := 0
	for step := 0; ; step++ {
		if step > 60 {
			t.Fatalf("node %s never settled", n.instance)
		}
		stage := lifecycle.Stages[stageIdx]
		kill := kills < maxKills && rng.Float64() < 0.85
		aim := aims[rng.IntN(len(aims))]
		before := readMarkers(marker)
		r, landed := runMaybeKill(t, n, rng, p, kill, aim, "run", "--stage", stage, "--config", cfg)
		st.runs++
		after := readMarkers(marker)
		for _, c := range scripts {
			if c.stage != stage {
				continue
			}
			name := c.s.Name
			started := after.starts[name] - before.starts[name]
			if started == 0 {
				continue
			}
			if c.firstB && finished[name] {
				t.Errorf("node %s: FIRST_BOOT_ONLY %s finished on this instance and ran again (boot %d)", n.instance, name, n.bootN)
			}
			if doneThisBoot[stage+"/"+name] {
				t.Errorf("node %s: %s/%s ended earlier in this boot and ran again (kill aimed at %s)\nmarkers:\n%s\nexecutor.log:\n%s",
					n.instance, stage, name, aim, strings.Join(after.lines, "\n"), readFile(n.layout.ExecutorLog()))
			}
			if pendingRerun[name] {
				st.reRuns++
				delete(pendingRerun, name)
			}
		}
		d := n.status()
		if landed != "" {
			kills++
			st.kills++
			st.landed[landed]++
			if d.Running {
				t.Errorf("after kill -9, status says an executor still runs: %s", d.Holder)
			}
			for _, s := range d.Stages {
				if s.Status == "running" {
					t.Errorf("after kill -9, status shows stage %s running", s.Name)
				}
				for _, sc := range s.Scripts {
					if sc.ThisBoot == "running" {
						t.Errorf("after kill -9, status shows %s running", sc.Name)
					}
				}
			}
		} else if r.code != 0 {
			t.Fatalf("node %s: an uninterrupted run failed: %s", n.instance, r)
		}
		for _, c := range scripts {
			sc, ok := lookupScript(d, c.stage, c.s.Name)
			if !ok {
				continue // killed before the configuration was cached: status knows no scripts yet
			}
			if c.stage == stage && (sc.ThisBoot == "succeeded" || sc.ThisBoot == "failed") {
				doneThisBoot[stage+"/"+c.s.Name] = true
			}
			if c.firstB && (sc.LastResult == "succeeded" || sc.LastResult == "failed") {
				finished[c.s.Name] = true
			}
			if sc.ThisBoot == "interrupted" {
				pendingRerun[c.s.Name] = true
			}
		}
		if landed != "" {
			if rng.IntN(2) == 0 {
				n.reboot()
				st.reboots++
				doneThisBoot = map[string]bool{}
				stageIdx = 0
			}
			continue
		}
		st.cleanRuns++
		stageIdx++
		if stageIdx < len(lifecycle.Stages) {
			continue
		}
		// Both stages ran to their end in this boot.
		if kills < maxKills {
			n.reboot()
			st.reboots++
			doneThisBoot = map[string]bool{}
			stageIdx = 0
			continue
		}
		break
	}
	for _, c := range scripts {
		if c.firstB && !finished[c.s.Name] {
			t.Errorf("node %s: FIRST_BOOT_ONLY %s never finished (interrupted runs must run again on the next boot)", n.instance, c.s.Name)
		}
	}
	if len(pendingRerun) > 0 {
		t.Errorf("node %s: interrupted and never run again: %v", n.instance, pendingRerun)
	}
	// One more boot without kills: only the EVERY_BOOT scripts run, from a cache that still
	// verifies.
	n.reboot()
	before := readMarkers(marker)
	for _, stage := range lifecycle.Stages {
		r := n.run("run", "--stage", stage)
		st.runs++
		if r.code != 0 {
			t.Fatalf("node %s: boot after the crashes: %s", n.instance, r)
		}
	}
	after := readMarkers(marker)
	for _, c := range scripts {
		got := after.starts[c.s.Name] - before.starts[c.s.Name]
		want := 0
		if !c.firstB {
			want = 1
		}
		if got != want {
			t.Errorf("node %s: last boot ran %s %d times, want %d", n.instance, c.s.Name, got, want)
		}
	}
	s, err := state.Read(n.layout.StateFile(), n.layout.JournalFile())
	if err != nil || s == nil {
		t.Fatalf("node %s: state after the crashes: %v", n.instance, err)
	}
	// Temporary snapshots of killed writers are swept by the next writer; a cached script's by
	// its next download.
	if l := leftovers(t, n.layout.StateDir()); len(l) > 0 {
		t.Errorf("node %s: temporary state files left after a clean boot: %v", n.instance, l)
	}
	st.leftoverTemps += len(leftovers(t, n.layout.ConfigDir()))
}

// runMaybeKill runs the executor; when kill is set it SIGKILLs it (and then every process of
// its scripts) at the moment aim says, and returns where the kill landed ("" when the
// executor ended before it).
func runMaybeKill(t *testing.T, n *node, rng *rand.Rand, p *testenv.FaultProxy, kill bool, aim string, args ...string) (result, string) {
	t.Helper()
	if !kill {
		return n.run(args...), ""
	}
	w := watch(t, n.layout.StateDir(), n.work)
	defer w.close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := n.command(ctx, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	// Drawn here: rng is not safe for the goroutine below and this one at once.
	downloadDelay := time.Duration(rng.IntN(8000)) * time.Microsecond
	scriptDelay := time.Duration(rng.IntN(15000)) * time.Microsecond
	randomDelay := time.Duration(rng.IntN(50000)) * time.Microsecond
	skip := rng.IntN(4)
	fire := make(chan struct{})
	go func() {
		defer close(fire)
		deadline := time.After(3 * time.Second)
		switch aim {
		case aimDownload:
			for p.Active() == 0 {
				select {
				case <-deadline:
					return
				case <-ctx.Done():
					return
				default:
					time.Sleep(200 * time.Microsecond)
				}
			}
			time.Sleep(downloadDelay)
		case aimScript, aimState:
			for {
				select {
				case <-deadline:
					return
				case ev, ok := <-w.events:
					if !ok {
						return
					}
					base := filepath.Base(ev)
					hit := false
					if aim == aimScript {
						hit = base == "markers"
					} else {
						hit = strings.HasPrefix(base, ".state.json.tmp-") || base == "state.journal"
					}
					if !hit {
						continue
					}
					if skip > 0 {
						skip--
						continue
					}
					if aim == aimScript {
						time.Sleep(scriptDelay)
					}
					return
				}
			}
		default:
			time.Sleep(randomDelay)
		}
	}()
	var landed string
	select {
	case err := <-exited:
		return finish(cmd, err, start, &stdout, &stderr), ""
	case <-fire:
		downloading := p.Active() > 0
		if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err != nil && err != syscall.ESRCH {
			t.Fatalf("kill: %v", err)
		} // ESRCH: it exited (and was reaped) just before; the exit code says so below
		err := <-exited
		r := finish(cmd, err, start, &stdout, &stderr)
		if r.code != 128+int(syscall.SIGKILL) {
			return r, "" // it had already exited
		}
		scripts := killScripts(t, n.instance)
		switch {
		case aim == aimState:
			landed = aimState
		case scripts > 0:
			landed = aimScript
		case downloading:
			landed = aimDownload
		default:
			landed = aimRandom
		}
		return r, landed
	}
}
