// Package progress tells people (stderr, hence the journal) and executor.log how a long wait
// is going: what it waits for, its limit and the last answer, at its start, every Interval and
// at its end. The waiting loop only reports what it sees (Observe); this package decides when
// to speak, so the loop can live anywhere (internal/slurm, internal/boot).
package progress

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
)

// DefaultInterval is how often a wait says it is still waiting.
const DefaultInterval = 30 * time.Second

// Wait reports one wait at a time (boot.WaitReporter).
type Wait struct {
	Out      io.Writer     // people: stderr
	Log      *zap.Logger   // executor.log
	Interval time.Duration // 0: DefaultInterval
	Now      func() time.Time
	// Manual: no ticker; the caller calls Report (tests).
	Manual bool

	What  string        // "node n1 to register with the Slurm controller"
	How   string        // how it is checked: "scontrol show node n1, every 2s"
	Limit time.Duration // 0: none

	mu     sync.Mutex
	start  time.Time
	last   string
	stop   chan struct{}
	done   sync.WaitGroup
	ticker *time.Ticker
}

func (w *Wait) now() time.Time {
	if w.Now != nil {
		return w.Now()
	}
	return time.Now()
}

func fmtDur(d time.Duration) string {
	switch {
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Round(time.Second).Seconds()))
	case d < time.Hour:
		d = d.Round(time.Second)
		if d%time.Minute == 0 {
			return fmt.Sprintf("%dm", int(d.Minutes()))
		}
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	d = d.Round(time.Minute)
	if d%time.Hour == 0 {
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

func (w *Wait) limit() string {
	if w.Limit <= 0 {
		return "no limit"
	}
	return "limit " + fmtDur(w.Limit)
}

func (w *Wait) say(line string) {
	if w.Out != nil {
		fmt.Fprintln(w.Out, "pcs-lifecycle: "+line)
	}
}

// Start says the wait began and, unless tick is nil, reports every Interval from a goroutine
// until Done. tick nil means the caller calls Report itself (tests).
func (w *Wait) Start(tick <-chan time.Time) {
	w.mu.Lock()
	w.start = w.now()
	w.mu.Unlock()
	how := ""
	if w.How != "" {
		how = " (" + w.How + ")"
	}
	w.say(fmt.Sprintf("waiting for %s, %s%s", w.What, w.limit(), how))
	if w.Log != nil {
		w.Log.Info("waiting for "+w.What, zap.Int64("limit_ms", w.Limit.Milliseconds()), zap.String("limit", w.limit()), zap.String("check", w.How))
	}
	if tick == nil {
		return
	}
	w.stop = make(chan struct{})
	w.done.Add(1)
	go func() {
		defer w.done.Done()
		for {
			select {
			case <-w.stop:
				return
			case <-tick:
				w.Report()
			}
		}
	}()
}

// Begin starts reporting a wait: what it waits for, how it checks, its limit (0: none); every
// Interval unless Manual.
func (w *Wait) Begin(what, how string, limit time.Duration) {
	w.What, w.How, w.Limit = what, how, limit
	w.last = ""
	if w.Manual {
		w.Start(nil)
		return
	}
	iv := w.Interval
	if iv <= 0 {
		iv = DefaultInterval
	}
	w.ticker = time.NewTicker(iv)
	w.Start(w.ticker.C)
}

// MaxAnswer bounds the answer quoted in a line (its first line only).
const MaxAnswer = 120

// Observe records the latest answer (the node's Slurm state, or the error of the check): its
// first line, at most MaxAnswer characters.
func (w *Wait) Observe(answer string) {
	answer, _, _ = strings.Cut(strings.TrimSpace(answer), "\n")
	if r := []rune(answer); len(r) > MaxAnswer {
		answer = string(r[:MaxAnswer-1]) + "…"
	}
	w.mu.Lock()
	w.last = answer
	w.mu.Unlock()
}

// Report says how long it has waited, of what limit, and the last answer.
func (w *Wait) Report() {
	w.mu.Lock()
	elapsed, last := w.now().Sub(w.start), w.last
	w.mu.Unlock()
	if last == "" {
		last = "none yet"
	}
	w.say(fmt.Sprintf("still waiting for %s: %s so far, %s; last answer: %s", w.What, fmtDur(elapsed), w.limit(), last))
	if w.Log != nil {
		w.Log.Info("still waiting for "+w.What, zap.Int64("waited_ms", elapsed.Milliseconds()),
			zap.Int64("limit_ms", w.Limit.Milliseconds()), zap.String("last_answer", last))
	}
}

// Done stops the reports and says how the wait ended ("registered", "timed out", …).
func (w *Wait) Done(outcome string) {
	if w.stop != nil {
		close(w.stop)
		w.done.Wait()
		w.stop = nil
	}
	if w.ticker != nil {
		w.ticker.Stop()
		w.ticker = nil
	}
	w.mu.Lock()
	elapsed, last := w.now().Sub(w.start), w.last
	w.mu.Unlock()
	line := fmt.Sprintf("done waiting for %s after %s: %s", w.What, fmtDur(elapsed), outcome)
	if last != "" {
		line += " (last answer: " + last + ")"
	}
	w.say(line)
}
