// Package proc runs one process the way a lifecycle script must run: its own process group,
// stdin /dev/null, an explicit working directory and environment, stdout and stderr interleaved
// into one capped writer, the whole group signalled on cancel or timeout, and a bounded wait for
// pipes a background grandchild keeps open. It is the only package that starts processes.
//
// One Run costs, beyond the fork and exec themselves: one pipe, one goroutine waiting for the
// process, a pooled 32 KiB read buffer and, only when a timeout or a cancellable context is
// given, one timer or context registration. Nothing polls.
//
// Choices a caller should know:
//   - A file without "#!" fails to start with ENOEXEC; proc never falls back to a shell (the
//     caller decides to run such a script as /bin/sh <file>).
//   - A script whose "#!" interpreter does not exist fails with an *InterpreterError naming it
//     (and saying so when the line ends in a carriage return: CRLF line ends), not with the
//     bare ENOENT that reads as if the script itself were missing.
//   - The child gets the default disposition for every signal the Go runtime handles (SIGTERM
//     included) and an empty signal mask; a signal this process set to SIG_IGN (signal.Ignore,
//     or SIGHUP/SIGINT ignored when it was started, as under nohup) stays ignored across exec,
//     as POSIX has it. The umask is inherited too: it is process-wide, set once at start-up.
//   - Result.Failed reports the exit only: a process that exits 0 after the SIGTERM of a
//     timeout is not Failed but TimedOut; the caller decides what a timeout means.
package proc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Defaults of Spec's zero values.
const (
	DefaultKillGrace = 10 * time.Second
	DefaultPipeWait  = 2 * time.Second
)

// MaxCapturedOutput caps the output Output keeps in memory.
const MaxCapturedOutput = 1 << 20

// readBufSize is the one buffer the output pipe is read through, whatever the child writes.
const readBufSize = 32 << 10

// Spec describes one process to run. Args does not include Path; argv[0] is Path.
type Spec struct {
	// Path is executed directly (never looked up in PATH, never through a shell); a relative
	// Path is relative to Dir.
	Path string
	Args []string
	// Env is the whole environment; nil means empty. (os/exec drops earlier duplicates of a
	// key: the last one wins.)
	Env []string
	Dir string // working directory; "" means "/"
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
	// background child may hold it); 0 means DefaultPipeWait. Processes still holding the pipe
	// then are left running: a script may start a daemon on purpose.
	PipeWait time.Duration
	// Started, when set, is called with the process ID (also its process group ID) once the
	// process started, before Run waits for it.
	Started func(pid int)
}

// Result is how a process ended.
type Result struct {
	PID         int
	ExitCode    int    // exit status; -1 when killed by a signal
	Signal      string // signal name without "SIG" ("KILL", "TERM") when killed by one, else ""
	TimedOut    bool   // Spec.Timeout expired and the group was signalled
	Canceled    bool   // ctx was done (cancelled or past its deadline) and the group was signalled
	Truncated   bool   // output passed MaxOutput
	OutputBytes int64  // bytes read from the pipe (including discarded ones)
	// OutputErr is the first error Output.Write returned; the rest of the output was then read
	// and discarded so that the process never blocks on a full pipe.
	OutputErr error
	// Duration runs from the start to the process's exit; the wait for a pipe held open by a
	// background child is not part of it.
	Duration time.Duration
}

// Failed reports whether the process failed: non-zero exit or killed by a signal.
func (r Result) Failed() bool { return r.ExitCode != 0 || r.Signal != "" }

// Run starts the process in its own process group with stdin /dev/null and waits for it. The
// error is non-nil only when it could not be started (then Result is zero but for Duration); it
// wraps the cause, so errors.Is(err, fs.ErrNotExist), fs.ErrPermission or syscall.ENOEXEC (a
// file without "#!") can be told apart. A ctx already done starts nothing and returns ctx's
// error. Cancelling ctx, or Timeout expiring, signals the whole group: SIGTERM, then SIGKILL
// after KillGrace if the process has not exited; once it has exited, whatever is left of its
// group is sent SIGKILL at once, so no member of a timed-out or cancelled group survives it
// (unless it left the group).
func Run(ctx context.Context, spec Spec) (Result, error) {
	start := time.Now()
	cmd, pr, err := startCmd(ctx, spec)
	if err != nil {
		return Result{Duration: time.Since(start)}, fmt.Errorf("start %s: %w", spec.Path, err)
	}
	pid := cmd.Process.Pid
	if spec.Started != nil {
		spec.Started(pid)
	}
	k := newKiller(pid, spec)
	stopCtx := context.AfterFunc(ctx, func() { k.terminate(&k.canceled) })
	pipeWait := spec.PipeWait
	if pipeWait <= 0 {
		pipeWait = DefaultPipeWait
	}
	done := make(chan waited, 1)
	go wait(cmd, k, pr, pipeWait, done)
	c := drain(pr, spec)
	w := <-done
	pr.Close()
	stopCtx()

	res := Result{PID: pid, ExitCode: -1, Truncated: c.truncated, OutputBytes: c.total, OutputErr: c.err, Duration: w.exited.Sub(start)}
	k.mu.Lock()
	res.TimedOut, res.Canceled = k.timedOut, k.canceled
	k.mu.Unlock()
	if ps := cmd.ProcessState; ps != nil {
		ws := ps.Sys().(syscall.WaitStatus)
		if ws.Signaled() {
			res.Signal = signalName(ws.Signal())
		} else {
			res.ExitCode = ws.ExitStatus()
		}
	}
	return res, nil
}

// startCmd starts the process in its own group, stdout and stderr on one pipe, whose read end
// it returns. Its error says why nothing started.
func startCmd(ctx context.Context, spec Spec) (*exec.Cmd, *os.File, error) {
	if spec.Path == "" {
		return nil, nil, errors.New("empty path")
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("output pipe: %w", err)
	}
	env := spec.Env
	if env == nil {
		env = []string{} // os/exec reads nil as "inherit ours"
	}
	dir := spec.Dir
	if dir == "" {
		dir = "/"
	}
	argv := make([]string, 0, 1+len(spec.Args))
	argv = append(argv, spec.Path)
	argv = append(argv, spec.Args...)
	// Built by hand rather than with exec.Command so that Path is never looked up in PATH.
	// Stdin nil is /dev/null; Stdout and Stderr are the same *os.File, so the child gets one
	// descriptor for both and os/exec starts no copying goroutine of its own.
	cmd := &exec.Cmd{Path: spec.Path, Args: argv, Env: env, Dir: dir, Stdout: pw, Stderr: pw,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true}}
	err = cmd.Start()
	pw.Close() // the child holds its own copy; EOF comes when every holder closed it
	if err != nil {
		pr.Close()
		return nil, nil, explainStart(spec.Path, dir, err)
	}
	return cmd, pr, nil
}

// explainStart turns the error of a failed start into one that names what failed once.
func explainStart(path, dir string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Path == path {
		err = pe.Err // "fork/exec <path>: ..." would name the path twice
	}
	// The child reports only an errno, the same for a failed chdir as for a failed exec
	// (os/exec checks Dir itself only without SysProcAttr): tell them apart here, off the
	// fast path.
	if _, serr := os.Stat(dir); serr != nil {
		if errors.As(serr, &pe) {
			pe.Op = "chdir"
		}
		return serr
	}
	return explainNotExist(path, dir, err)
}

// newKiller is the group's killer, armed with spec's timeout.
func newKiller(pgid int, spec Spec) *killer {
	k := &killer{pgid: pgid, grace: spec.KillGrace}
	if k.grace <= 0 {
		k.grace = DefaultKillGrace
	}
	if spec.Timeout > 0 {
		k.timeout = time.AfterFunc(spec.Timeout, func() { k.terminate(&k.timedOut) })
	}
	return k
}

// drain reads the pipe into spec.Output (capped) until EOF, or until the deadline wait sets
// PipeWait after the exit.
func drain(pr *os.File, spec Spec) *capWriter {
	c := &capWriter{w: spec.Output, max: spec.MaxOutput}
	bufp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bufp)
	buf := *bufp
	for {
		n, err := pr.Read(buf)
		if n > 0 {
			c.write(buf[:n])
		}
		if err != nil {
			if err != io.EOF && !errors.Is(err, os.ErrDeadlineExceeded) {
				pr.Close() // unexpected: never leave the child blocked on a pipe nobody reads
			}
			return c
		}
	}
}

// Output runs a short command (such as scontrol) and returns its stdout and stderr interleaved,
// capped at MaxCapturedOutput (1 MiB). Same semantics as Run; spec.Output and spec.MaxOutput are
// ignored.
func Output(ctx context.Context, spec Spec) ([]byte, Result, error) {
	var b bytes.Buffer
	spec.Output = &b
	spec.MaxOutput = MaxCapturedOutput
	res, err := Run(ctx, spec)
	return b.Bytes(), res, err
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, readBufSize); return &b }}

type waited struct {
	exited time.Time
}

// wait waits for the process to exit, lets k SIGKILL what is left of a signalled group while the
// leader is still an unreaped zombie (so its PID, the group's ID, cannot have been reused), reaps
// it, and starts the PipeWait clock on the reading side.
func wait(cmd *exec.Cmd, k *killer, pr *os.File, pipeWait time.Duration, done chan<- waited) {
	var info unix.Siginfo
	err := unix.Waitid(unix.P_PID, cmd.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
	for err == unix.EINTR {
		err = unix.Waitid(unix.P_PID, cmd.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
	}
	exited := time.Now()
	if err == nil {
		k.leaderExited()
		_ = cmd.Wait() // the outcome is in cmd.ProcessState
	} else {
		// Cannot happen for our own child; fall back to a plain wait.
		_ = cmd.Wait()
		exited = time.Now()
		k.leaderExited()
	}
	if pr.SetReadDeadline(time.Now().Add(pipeWait)) != nil {
		pr.Close() // not pollable (cannot happen on Linux): stop reading now rather than never
	}
	done <- waited{exited: exited}
}

// killer signals the process group on timeout or cancellation.
type killer struct {
	pgid  int
	grace time.Duration

	mu       sync.Mutex
	exited   bool        // the leader exited: no more signals but the final group SIGKILL
	timedOut bool        // set by the timeout
	canceled bool        // set by ctx
	timeout  *time.Timer // nil without Spec.Timeout; written before any callback can run
	kill     *time.Timer // SIGKILL after the grace
}

// terminate sends SIGTERM to the group and arms the SIGKILL, once; reason records why.
func (k *killer) terminate(reason *bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.exited || k.timedOut || k.canceled {
		return
	}
	*reason = true
	_ = syscall.Kill(-k.pgid, syscall.SIGTERM)
	k.kill = time.AfterFunc(k.grace, func() {
		k.mu.Lock()
		defer k.mu.Unlock()
		if !k.exited {
			_ = syscall.Kill(-k.pgid, syscall.SIGKILL)
		}
	})
}

// leaderExited stops the timers; after a timeout or cancellation it sends SIGKILL to the rest of
// the group at once.
func (k *killer) leaderExited() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.exited = true
	if k.timeout != nil {
		k.timeout.Stop()
	}
	if k.kill != nil {
		k.kill.Stop()
	}
	if k.timedOut || k.canceled {
		_ = syscall.Kill(-k.pgid, syscall.SIGKILL)
	}
}

// capWriter passes at most max bytes to w, counts everything and remembers w's first error.
type capWriter struct {
	w         io.Writer
	max       int64
	passed    int64
	total     int64
	truncated bool
	err       error
}

func (c *capWriter) write(p []byte) {
	c.total += int64(len(p))
	if c.max > 0 {
		room := c.max - c.passed
		if int64(len(p)) > room {
			p = p[:room]
			c.truncated = true
		}
	}
	c.passed += int64(len(p))
	if c.w == nil || c.err != nil || len(p) == 0 {
		return
	}
	n, err := c.w.Write(p)
	if err == nil && n < len(p) {
		err = io.ErrShortWrite
	}
	c.err = err
}

// signalName is "KILL" for SIGKILL; a signal without a name is its number.
func signalName(s syscall.Signal) string {
	if name := unix.SignalName(s); name != "" {
		return strings.TrimPrefix(name, "SIG")
	}
	return strconv.Itoa(int(s))
}
