package perf_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/testenv"
)

var (
	binPath   string // the pcs-lifecycle under test
	helloPath string // a static hello-world built the same way (W3's peer)
	workDir   string
	full      = os.Getenv("PCS_BENCH") != ""
	rounds    = 1
)

func TestMain(m *testing.M) { os.Exit(mainWithCode(m)) }

func mainWithCode(m *testing.M) int {
	if full {
		rounds = 10
		if n, err := strconv.Atoi(os.Getenv("PCS_BENCH_ROUNDS")); err == nil && n > 0 {
			rounds = n
		}
	}
	var err error
	workDir, err = os.MkdirTemp("", "pcs-perf-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "perf:", err)
		return 1
	}
	defer os.RemoveAll(workDir)
	defer testenv.StopSharedS3()
	modRoot, err := testenv.ModuleRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "perf:", err)
		return 1
	}
	// The binary as `make build` makes it (static, trimmed, stripped), and a hello-world built
	// the same way.
	binPath = os.Getenv("PCS_LIFECYCLE_BIN")
	if binPath == "" {
		binPath = filepath.Join(workDir, "pcs-lifecycle")
		if err := goBuild(modRoot, binPath, "./cmd/pcs-lifecycle"); err != nil {
			fmt.Fprintln(os.Stderr, "perf:", err)
			return 1
		}
	}
	helloDir := filepath.Join(workDir, "hello")
	err = os.MkdirAll(helloDir, 0o755)
	if err == nil {
		err = os.WriteFile(filepath.Join(helloDir, "go.mod"), []byte("module hello\n\ngo 1.21\n"), 0o644)
		if err == nil {
			err = os.WriteFile(filepath.Join(helloDir, "main.go"), []byte("package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hello, world\") }\n"), 0o644)
		}
		if err == nil {
			helloPath = filepath.Join(workDir, "hello-world")
			err = goBuild(helloDir, helloPath, ".")
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "perf: hello-world:", err)
		return 1
	}
	return m.Run()
}

func goBuild(dir, out, pkg string) error {
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", out, pkg)
	build.Dir = dir
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
	}
	return nil
}

// row is one line of the benchmark table.
type row struct {
	Workload string  `json:"workload"`
	Measure  string  `json:"measure"`
	Value    float64 `json:"value"`
	Unit     string  `json:"unit"`
	Peer     string  `json:"peer,omitempty"`
	PeerVal  float64 `json:"peer_value,omitempty"`
	Ratio    float64 `json:"ratio,omitempty"` // Value / PeerVal
	Target   string  `json:"target,omitempty"`
	Met      *bool   `json:"met,omitempty"`
	Note     string  `json:"note,omitempty"`
	Rounds   int     `json:"rounds"`
}

var reportMu sync.Mutex

// report logs r and, under PCS_BENCH_REPORT, appends it to that file as a JSON line.
func report(t testing.TB, r row) {
	t.Helper()
	r.Rounds = rounds
	if r.PeerVal != 0 && r.Ratio == 0 {
		r.Ratio = r.Value / r.PeerVal
	}
	t.Logf("%s %s: %.2f %s (peer %s %.2f, ratio %.2f) target %s met %v %s", r.Workload, r.Measure, r.Value, r.Unit, r.Peer, r.PeerVal, r.Ratio, r.Target, fmtMet(r.Met), r.Note)
	path := os.Getenv("PCS_BENCH_REPORT")
	if path == "" {
		return
	}
	b, err := json.Marshal(r)
	require.NoError(t, err)
	reportMu.Lock()
	defer reportMu.Unlock()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	require.NoError(t, err)
	defer f.Close()
	_, err = f.Write(append(b, '\n'))
	require.NoError(t, err)
}

func fmtMet(m *bool) string {
	if m == nil {
		return "-"
	}
	return strconv.FormatBool(*m)
}

func met(b bool) *bool { return &b }

// median of xs (xs is sorted in place).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	sort.Float64s(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// percentile p (0..100) of xs, nearest rank (xs is sorted in place).
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	sort.Float64s(xs)
	i := int(float64(len(xs))*p/100+0.999999) - 1
	return xs[max(0, min(i, len(xs)-1))]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// proc is one finished run of a command.
type proc struct {
	code   int
	out    string
	wall   time.Duration
	maxRSS int64         // KiB, the process's own peak resident set (VmHWM)
	cpu    time.Duration // user + system CPU time
}

func (p proc) String() string {
	return fmt.Sprintf("exit %d after %s, peak RSS %d KiB:\n%s", p.code, p.wall, p.maxRSS, p.out)
}

// run runs argv with env and returns its exit code, output, wall time and peak RSS.
func run(t testing.TB, env []string, argv ...string) proc {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Dir = "/"
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatalf("%v: %v", argv, err)
	}
	hwm := watchHWM(cmd.Process.Pid, 2*time.Millisecond)
	_ = cmd.Wait()
	p := proc{wall: time.Since(t0), out: out.String(), code: cmd.ProcessState.ExitCode()}
	p.maxRSS = hwm()
	fillUsage(&p, cmd)
	return p
}

// watchHWM samples the process's own peak resident set (VmHWM of /proc/PID/status: its
// children, the scripts and scontrol, are not counted) every d; the function it returns stops
// the sampling and gives the largest value seen, in KiB (VmHWM only grows: what is missed is
// the growth of the last d). getrusage's ru_maxrss cannot serve: for a waited-for child it is
// the largest of the child and its own children.
func watchHWM(pid int, d time.Duration) func() int64 {
	stop := make(chan struct{})
	done := make(chan int64)
	go func() {
		var peak int64
		path := fmt.Sprintf("/proc/%d/status", pid)
		tick := time.NewTicker(d)
		defer tick.Stop()
		for {
			if data, err := os.ReadFile(path); err == nil {
				for _, line := range strings.Split(string(data), "\n") {
					if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
						if kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64); err == nil {
							peak = max(peak, kb)
						}
					}
				}
			}
			select {
			case <-stop:
				done <- peak
				return
			case <-tick.C:
			}
		}
	}()
	return func() int64 {
		close(stop)
		return <-done
	}
}

// fillUsage copies the finished cmd's CPU time (its own and its waited-for children's) into p.
func fillUsage(p *proc, cmd *exec.Cmd) {
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		p.cpu = time.Duration(syscall.TimevalToNsec(ru.Utime) + syscall.TimevalToNsec(ru.Stime))
	}
}
