// Package proc runs one process the way a lifecycle script must run: its own process group,
// stdin /dev/null, an explicit working directory and environment, stdout and stderr interleaved
// into one capped writer, the whole group signalled on cancel or timeout, and a bounded wait for
// pipes a background grandchild keeps open. It is the only package that starts processes.
package proc

import (
	"context"
	"io"
	"time"
)

// Defaults of Spec's zero values.
const (
	DefaultKillGrace = 10 * time.Second
	DefaultPipeWait  = 2 * time.Second
)

// Spec describes one process to run. Args does not include Path; argv[0] is Path.
type Spec struct {
	Path string
	Args []string
	Env  []string // the whole environment; nil means empty
	Dir  string   // working directory; "" means "/"
	// Output receives stdout and stderr interleaved in the order written (one pipe for both).
	// nil discards.
	Output io.Writer
	// MaxOutput caps the bytes passed to Output; past it the rest is read and discarded and
	// Result.Truncated is set. 0 means no cap.
	MaxOutput int64
	// Timeout kills the process group (SIGTERM, SIGKILL after KillGrace) when it expires.
	// 0 means none.
	Timeout time.Duration
	// KillGrace is the wait between SIGTERM and SIGKILL; 0 means DefaultKillGrace.
	KillGrace time.Duration
	// PipeWait bounds the wait, after the process exited, for the output pipe to close (a
	// background child may hold it); 0 means DefaultPipeWait.
	PipeWait time.Duration
}

// Result is how a process ended.
type Result struct {
	PID         int
	ExitCode    int    // exit status; -1 when killed by a signal
	Signal      string // signal name without "SIG" ("KILL", "TERM") when killed by one, else ""
	TimedOut    bool   // Spec.Timeout expired and the group was signalled
	Canceled    bool   // ctx was cancelled and the group was signalled
	Truncated   bool   // output passed MaxOutput
	OutputBytes int64  // bytes read from the pipe (including discarded ones)
	Duration    time.Duration
}

// Failed reports whether the process failed: non-zero exit or killed by a signal.
func (r Result) Failed() bool { return r.ExitCode != 0 || r.Signal != "" }

// Run starts the process in its own process group with stdin /dev/null and waits for it. The
// error is non-nil only when it could not be started (then Result is zero but for Duration).
// Cancelling ctx signals the whole group: SIGTERM, then SIGKILL after KillGrace.
func Run(ctx context.Context, spec Spec) (Result, error) {
	panic("not implemented")
}

// Output runs a short command (such as scontrol) and returns its stdout and stderr interleaved,
// capped at 1 MiB. Same semantics as Run.
func Output(ctx context.Context, spec Spec) ([]byte, Result, error) {
	panic("not implemented")
}
