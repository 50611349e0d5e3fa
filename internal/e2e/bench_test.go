package e2e_test

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const benchScripts = 20

// noopNode is a node whose first boot cached benchScripts EVERY_BOOT no-op scripts.
func noopNode(b *testing.B) *node {
	b.Helper()
	bk := newBucket(b)
	loc := bk.put(b, "noop.sh", []byte("#!/bin/sh\n:\n"))
	n := newNode(b)
	var defs []scriptDef
	for i := 0; i < benchScripts; i++ {
		defs = append(defs, script(fmt.Sprintf("noop-%02d", i), loc).every())
	}
	n.requireRun(0, "run", "--stage", bootstrapped, "--config", n.writeConfig(stages(defs, nil)))
	return n
}

// directExec runs the cached scripts one after the other, as a shell loop would.
func directExec(tb testing.TB, n *node) {
	for i := 0; i < benchScripts; i++ {
		cmd := exec.Command(filepath.Join(n.scriptsDir(), fmt.Sprintf("noop-%02d", i)))
		cmd.Dir = "/"
		cmd.Env = []string{"PATH=/usr/bin:/bin"}
		require.NoError(tb, cmd.Run())
	}
}

// BenchmarkRun20CachedNoop: `run --stage nodeBootstrapped` of 20 cached EVERY_BOOT no-op
// scripts on a new boot each iteration, against exec'ing the same 20 scripts directly. The
// executor's sub-benchmark reports its overhead per script over the direct execs, with and
// without its fixed cost (a run that finds the stage already done: start-up, lock, state).
func BenchmarkRun20CachedNoop(b *testing.B) {
	b.Run("pcs-lifecycle", func(b *testing.B) {
		n := noopNode(b)
		// Paired with every timed run, untimed: the direct execs of the same 20 scripts, and
		// the fixed cost of a run that finds the stage already done (start-up, lock, state,
		// configuration, no script).
		var direct, fixed time.Duration
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			n.reboot()
			r := n.run("run", "--stage", bootstrapped)
			if r.code != 0 {
				b.Fatalf("run: %s", r)
			}
			b.StopTimer()
			t0 := time.Now()
			directExec(b, n)
			direct += time.Since(t0)
			fixed += n.requireRun(0, "run", "--stage", bootstrapped).dur
			b.StartTimer()
		}
		b.StopTimer()
		per := time.Duration(b.Elapsed().Nanoseconds() / int64(b.N))
		direct /= time.Duration(b.N)
		fixed /= time.Duration(b.N)
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		b.ReportMetric(ms(per), "ms/run")
		b.ReportMetric(ms(direct), "ms/direct-20")
		b.ReportMetric(ms(fixed), "ms/fixed")
		b.ReportMetric(ms(per-direct)/benchScripts, "ms-overhead/script")
		b.ReportMetric(ms(per-direct-fixed)/benchScripts, "ms-overhead/script-beyond-fixed")
		require.Len(b, n.runs(bootstrapped, "noop-00"), b.N+1)
	})
	b.Run("direct-exec", func(b *testing.B) {
		n := noopNode(b)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			directExec(b, n)
		}
		b.StopTimer()
		b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N)/benchScripts, "ms/script")
	})
}

// BenchmarkStatus: `status` and `status --json` on a node with 20 scripts and some history.
func BenchmarkStatus(b *testing.B) {
	n := noopNode(b)
	for i := 0; i < 3; i++ {
		n.reboot()
		n.requireRun(0, "run", "--stage", bootstrapped)
	}
	for _, args := range [][]string{nil, {"--json"}} {
		b.Run(fmt.Sprintf("status%v", args), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				r := n.run("status", args...)
				if r.code != 0 {
					b.Fatalf("status: %s", r)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/status")
		})
	}
}
