package boot

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/slurm"
)

// waitLog is a WaitReporter writing what it hears.
type waitLog struct{ lines []string }

func (w *waitLog) Begin(what, how string, limit time.Duration) {
	w.lines = append(w.lines, fmt.Sprintf("begin %s (%s) %s", what, how, limit))
}
func (w *waitLog) Observe(answer string) { w.lines = append(w.lines, "answer "+answer) }
func (w *waitLog) Done(outcome string)   { w.lines = append(w.lines, "done "+outcome) }

// TestRegistrationWaitReports: the registration wait tells its reporter what it waits for,
// how and its limit, each answer, and how it ended.
func TestRegistrationWaitReports(t *testing.T) {
	for _, tc := range []struct {
		name    string
		waitErr error
		done    string
	}{
		{"registered", nil, "done registered"},
		{"timed out", &slurm.TimeoutError{Node: "compute-1", Timeout: time.Minute}, "done timed out"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, Config{RegistrationPoll: 2 * time.Second})
			r.slurm.waitErr = tc.waitErr
			w := &waitLog{}
			r.boot.Wait = w
			_ = r.boot.Stage(context.Background(), ready)
			require.Len(t, w.lines, 3, "%q", w.lines)
			require.Equal(t, "begin node compute-1 to register with the Slurm controller (scontrol show node compute-1, every 2s) 1m0s", w.lines[0])
			require.Contains(t, w.lines[1], "answer ")
			require.Equal(t, tc.done, w.lines[2])
		})
	}
}
