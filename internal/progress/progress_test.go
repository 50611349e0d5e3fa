package progress_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/progress"
)

// TestWait: the wait says what it waits for and its limit at its start, the time so far and
// the last answer at each report, and how it ended; executor.log gets the same.
func TestWait(t *testing.T) {
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	var out bytes.Buffer
	core, logs := observer.New(zap.InfoLevel)
	w := &progress.Wait{Out: &out, Log: zap.New(core), Now: func() time.Time { return now }, Manual: true}
	w.Begin("node n1 to register with the Slurm controller", "scontrol show node n1, every 2s", 30*time.Minute)
	require.Equal(t, "pcs-lifecycle: waiting for node n1 to register with the Slurm controller, limit 30m (scontrol show node n1, every 2s)\n", out.String())

	now = now.Add(30 * time.Second)
	w.Observe("NOT_RESPONDING+CLOUD")
	w.Report()
	now = now.Add(62 * time.Second)
	w.Observe("IDLE")
	w.Done("registered")
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	require.Len(t, lines, 3, out.String())
	require.Equal(t, "pcs-lifecycle: still waiting for node n1 to register with the Slurm controller: 30s so far, limit 30m; last answer: NOT_RESPONDING+CLOUD", lines[1])
	require.Equal(t, "pcs-lifecycle: done waiting for node n1 to register with the Slurm controller after 1m32s: registered (last answer: IDLE)", lines[2])
	require.Equal(t, 1, logs.FilterMessage("still waiting for node n1 to register with the Slurm controller").Len())
	require.Equal(t, "NOT_RESPONDING+CLOUD", logs.FilterMessage("still waiting for node n1 to register with the Slurm controller").All()[0].ContextMap()["last_answer"])
}

// TestWaitNoAnswerYet: a report before any answer says so.
func TestWaitNoAnswerYet(t *testing.T) {
	var out bytes.Buffer
	w := &progress.Wait{Out: &out, Manual: true}
	w.Begin("x", "", 0)
	w.Report()
	require.Contains(t, out.String(), "waiting for x, no limit\n")
	require.Contains(t, out.String(), "last answer: none yet\n")

	// A long, many-line answer (scontrol's errors) is quoted by its first line, bounded.
	w.Observe("scontrol: error: " + strings.Repeat("x", 300) + "\nscontrol: fatal: more")
	w.Done("Slurm not configured")
	last := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	require.NotContains(t, last[len(last)-1], "fatal")
	require.Contains(t, last[len(last)-1], "…)")
	require.Less(t, len([]rune(last[len(last)-1])), 250)
}
