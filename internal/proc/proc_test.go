package proc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// testEnv is a clean environment like the one scripts get.
var testEnv = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8"}

// fixture is the absolute path of a script in testdata (Dir defaults to "/", so relative paths
// would not resolve).
func fixture(t testing.TB, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", name))
	require.NoError(t, err)
	return p
}

// alive reports whether pid is a live process (a zombie is dead: PID 1 of a container may never
// reap the orphans it inherits).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

func run(t *testing.T, ctx context.Context, spec Spec) (Result, string, time.Duration) {
	t.Helper()
	var out bytes.Buffer
	spec.Output = &out
	if spec.Env == nil {
		spec.Env = testEnv
	}
	start := time.Now()
	res, err := Run(ctx, spec)
	elapsed := time.Since(start)
	require.NoError(t, err)
	return res, out.String(), elapsed
}

func TestRunOutcomes(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	tmp, err := filepath.EvalSymlinks(tmp)
	require.NoError(t, err)

	tests := []struct {
		name        string
		spec        Spec
		cancelAfter time.Duration // cancel ctx after this long; 0 never
		wantOutput  string
		wantExit    int
		wantSignal  string
		wantTimeout bool
		wantCancel  bool
		minElapsed  time.Duration
		maxElapsed  time.Duration // 0: 5s
	}{
		{
			name:       "succeeds with stdout and stderr interleaved in order",
			spec:       Spec{Path: "succeeds.sh", Args: []string{"a b", "", "c"}},
			wantOutput: "out1\nerr1\nout2\nerr2\nargs:a b||c|\n",
		},
		{
			name:       "fails with exit 3",
			spec:       Spec{Path: "fails.sh"},
			wantOutput: "about to fail\n",
			wantExit:   3,
		},
		{
			name:       "killed by a signal",
			spec:       Spec{Path: "killed.sh"},
			wantOutput: "killing myself\n",
			wantExit:   -1,
			wantSignal: "KILL",
		},
		{
			name:        "hangs: timeout sends SIGTERM, delivered normally",
			spec:        Spec{Path: "hangs.sh", Timeout: 200 * time.Millisecond},
			wantOutput:  "started\n",
			wantExit:    -1,
			wantSignal:  "TERM",
			wantTimeout: true,
			minElapsed:  200 * time.Millisecond,
			maxElapsed:  3 * time.Second, // well under the default 10 s grace: TERM did it
		},
		{
			name:        "ignores SIGTERM: SIGKILL after the grace",
			spec:        Spec{Path: "ignores-term.sh", Timeout: 200 * time.Millisecond, KillGrace: 300 * time.Millisecond},
			wantOutput:  "started\n",
			wantExit:    -1,
			wantSignal:  "KILL",
			wantTimeout: true,
			minElapsed:  500 * time.Millisecond,
		},
		{
			name:        "SIGTERM reaches every member of the group",
			spec:        Spec{Path: "term-propagates.sh", Timeout: 200 * time.Millisecond},
			wantOutput:  "ready\nchild got TERM\nleader done\n",
			wantTimeout: true, // and exit 0: Failed() is false, the caller decides what a timeout means
			minElapsed:  200 * time.Millisecond,
			maxElapsed:  3 * time.Second, // the child ended at SIGTERM, not at the 10 s SIGKILL
		},
		{
			name:        "ctx cancelled: SIGTERM to the group",
			spec:        Spec{Path: "hangs.sh", Timeout: time.Minute},
			cancelAfter: 200 * time.Millisecond,
			wantOutput:  "started\n",
			wantExit:    -1,
			wantSignal:  "TERM",
			wantCancel:  true,
			minElapsed:  200 * time.Millisecond,
			maxElapsed:  3 * time.Second,
		},
		{
			name:       "background child writing during the pipe wait is captured; return at EOF",
			spec:       Spec{Path: "background-writes.sh", PipeWait: 5 * time.Second},
			wantOutput: "early\nlate\n",
			minElapsed: 100 * time.Millisecond,
			maxElapsed: 3 * time.Second,
		},
		{
			name:       "closes stdout early and keeps running: return when it exits",
			spec:       Spec{Path: "closes-stdout.sh"},
			wantOutput: "before\n",
			minElapsed: time.Second,
		},
		{
			name:       "stdin is /dev/null",
			spec:       Spec{Path: "reads-stdin.sh"},
			wantOutput: "eof\n/dev/null\n",
		},
		{
			name:       "environment is exactly Env",
			spec:       Spec{Path: "/usr/bin/env", Env: []string{"A=1", "B=two words", "C="}},
			wantOutput: "A=1\nB=two words\nC=\n",
		},
		{
			name:       "empty Env is empty",
			spec:       Spec{Path: "/usr/bin/env", Env: []string{}},
			wantOutput: "",
		},
		{
			name:       "working directory is Dir",
			spec:       Spec{Path: "/bin/pwd", Dir: tmp},
			wantOutput: tmp + "\n",
		},
		{
			name:       "working directory defaults to /",
			spec:       Spec{Path: "/bin/pwd"},
			wantOutput: "/\n",
		},
		{
			name:       "relative Path is relative to Dir",
			spec:       Spec{Path: "./fails.sh", Dir: fixture(t, "")},
			wantOutput: "about to fail\n",
			wantExit:   3,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			spec := tc.spec
			if !strings.HasPrefix(spec.Path, "/") && spec.Dir == "" {
				spec.Path = fixture(t, spec.Path)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.cancelAfter > 0 {
				time.AfterFunc(tc.cancelAfter, cancel)
			}
			res, out, elapsed := run(t, ctx, spec)

			require.Equal(t, tc.wantOutput, out)
			require.Equal(t, tc.wantExit, res.ExitCode, "exit code")
			require.Equal(t, tc.wantSignal, res.Signal, "signal")
			require.Equal(t, tc.wantTimeout, res.TimedOut, "timed out")
			require.Equal(t, tc.wantCancel, res.Canceled, "canceled")
			require.Equal(t, tc.wantExit != 0 || tc.wantSignal != "", res.Failed())
			require.False(t, res.Truncated)
			require.NoError(t, res.OutputErr)
			require.EqualValues(t, len(tc.wantOutput), res.OutputBytes)
			require.Positive(t, res.PID)
			require.Positive(t, res.Duration)
			require.LessOrEqual(t, res.Duration, elapsed)
			require.GreaterOrEqual(t, elapsed, tc.minElapsed)
			maxElapsed := tc.maxElapsed
			if maxElapsed == 0 {
				maxElapsed = 5 * time.Second
			}
			require.Less(t, elapsed, maxElapsed)
		})
	}
}

func TestRunStartErrors(t *testing.T) {
	t.Parallel()
	canceled, cancel := context.WithCancel(context.Background())
	cancel()

	tests := []struct {
		name    string
		ctx     context.Context
		spec    Spec
		wantIs  error
		wantMsg string
	}{
		{
			name:    "missing file",
			spec:    Spec{Path: fixture(t, "does-not-exist.sh")},
			wantIs:  fs.ErrNotExist,
			wantMsg: "start " + fixture(t, "does-not-exist.sh") + ": no such file or directory",
		},
		{
			name:    "not executable",
			spec:    Spec{Path: fixture(t, "not-executable.sh")},
			wantIs:  fs.ErrPermission,
			wantMsg: "start " + fixture(t, "not-executable.sh") + ": permission denied",
		},
		{
			name:    "no #! line (ENOEXEC: proc never falls back to a shell)",
			spec:    Spec{Path: fixture(t, "no-shebang.sh")},
			wantIs:  syscall.ENOEXEC,
			wantMsg: "start " + fixture(t, "no-shebang.sh") + ": exec format error",
		},
		{
			name:    "#! interpreter missing: named",
			spec:    Spec{Path: fixture(t, "missing-interpreter.sh")},
			wantIs:  fs.ErrNotExist,
			wantMsg: "start " + fixture(t, "missing-interpreter.sh") + `: interpreter "/nonexistent/interpreter" named by its #! line does not exist`,
		},
		{
			name:   "CRLF line ends: the interpreter is /bin/sh\\r, and the message says why",
			spec:   Spec{Path: fixture(t, "crlf.sh")},
			wantIs: fs.ErrNotExist,
			wantMsg: "start " + fixture(t, "crlf.sh") + `: interpreter "/bin/sh\r" named by its #! line does not exist: ` +
				`the script has CRLF (Windows) line ends; convert it to LF (dos2unix, or sed -i 's/\r$//')`,
		},
		{
			name:    "missing working directory",
			spec:    Spec{Path: "/bin/true", Dir: "/does/not/exist"},
			wantIs:  fs.ErrNotExist,
			wantMsg: "start /bin/true: chdir /does/not/exist: no such file or directory",
		},
		{
			name:    "empty path",
			spec:    Spec{},
			wantMsg: "start : empty path",
		},
		{
			name:    "ctx already done: nothing starts",
			ctx:     canceled,
			spec:    Spec{Path: "/bin/true"},
			wantIs:  context.Canceled,
			wantMsg: "start /bin/true: context canceled",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := tc.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			var out bytes.Buffer
			tc.spec.Output = &out
			res, err := Run(ctx, tc.spec)
			require.Error(t, err)
			if tc.wantIs != nil {
				require.ErrorIs(t, err, tc.wantIs)
			}
			require.EqualError(t, err, tc.wantMsg)
			res.Duration = 0
			require.Zero(t, res)
			require.Zero(t, out.Len())
		})
	}
}

// A background child holding the pipe delays the return by PipeWait at most, and is left running.
func TestRunBackgroundChildHoldingPipe(t *testing.T) {
	t.Parallel()
	const pipeWait = 300 * time.Millisecond
	res, out, elapsed := run(t, context.Background(), Spec{Path: fixture(t, "background.sh"), PipeWait: pipeWait})

	bg, err := strconv.Atoi(strings.TrimSpace(out))
	require.NoError(t, err, "output %q", out)
	t.Cleanup(func() { _ = syscall.Kill(bg, syscall.SIGKILL) })

	require.Equal(t, 0, res.ExitCode)
	require.Empty(t, res.Signal)
	require.GreaterOrEqual(t, elapsed, pipeWait)
	require.LessOrEqual(t, res.Duration, elapsed-pipeWait, "Duration ends at the exit, not after the pipe wait")
	require.True(t, alive(bg), "the background child must be left running: Run returned without waiting for it")
}

// A timeout or cancellation kills the whole group, including children that ignore SIGTERM, as
// soon as the leader has exited (not after the grace).
func TestRunSignalKillsWholeGroup(t *testing.T) {
	t.Parallel()
	for _, cancelled := range []bool{false, true} {
		name := "timeout"
		if cancelled {
			name = "cancel"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			spec := Spec{Path: fixture(t, "forks-children.sh"), KillGrace: time.Minute}
			if cancelled {
				time.AfterFunc(300*time.Millisecond, cancel)
			} else {
				spec.Timeout = 300 * time.Millisecond
			}
			res, out, elapsed := run(t, ctx, spec)

			var children []int
			for _, line := range strings.Split(out, "\n") {
				if pid, ok := strings.CutPrefix(line, "child "); ok {
					n, err := strconv.Atoi(pid)
					require.NoError(t, err)
					children = append(children, n)
				}
			}
			require.Len(t, children, 8, "output %q", out)
			require.Contains(t, out, "ready\n")
			require.Equal(t, !cancelled, res.TimedOut)
			require.Equal(t, cancelled, res.Canceled)
			require.Equal(t, "TERM", res.Signal, "the leader dies of SIGTERM")
			require.Less(t, elapsed, 10*time.Second, "the rest of the group is killed at the leader's exit, not after the grace")
			// SIGKILL was sent before Run returned; its delivery is asynchronous.
			require.Eventually(t, func() bool {
				for _, pid := range children {
					if alive(pid) {
						return false
					}
				}
				return true
			}, 2*time.Second, 10*time.Millisecond, "a child survived: %v", children)
		})
	}
}

// The child leads its own process group, blocks no signal and does not ignore SIGTERM.
func TestRunProcessGroupAndSignalDispositions(t *testing.T) {
	t.Parallel()
	res, out, _ := run(t, context.Background(), Spec{Path: "/bin/cat", Args: []string{"/proc/self/stat", "/proc/self/status"}})
	require.Equal(t, 0, res.ExitCode)

	stat, _, _ := strings.Cut(out, "\n")
	fields := strings.Fields(stat[strings.LastIndexByte(stat, ')')+1:])
	require.Equal(t, strconv.Itoa(res.PID), fields[2], "pgrp is the child's own PID")

	status := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			status[k] = strings.TrimSpace(v)
		}
	}
	blocked, err := strconv.ParseUint(status["SigBlk"], 16, 64)
	require.NoError(t, err)
	require.Zero(t, blocked, "no signal is blocked in the child")
	ignored, err := strconv.ParseUint(status["SigIgn"], 16, 64)
	require.NoError(t, err)
	require.Zero(t, ignored&(1<<(uint(syscall.SIGTERM)-1)), "SIGTERM is not ignored in the child")
}

// countWriter counts and keeps nothing.
type countWriter struct{ n int64 }

func (w *countWriter) Write(p []byte) (int, error) { w.n += int64(len(p)); return len(p), nil }

// Not parallel: it measures the allocations of the whole process while 100 MiB flow.
func TestRunFloodIsBounded(t *testing.T) {
	const flood = 100 << 20
	const maxOutput = 1 << 20
	var w countWriter
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	res, err := Run(context.Background(), Spec{Path: fixture(t, "floods.sh"), Env: testEnv, Output: &w, MaxOutput: maxOutput})
	runtime.ReadMemStats(&after)
	require.NoError(t, err)

	require.Equal(t, 0, res.ExitCode)
	require.True(t, res.Truncated)
	require.EqualValues(t, flood, res.OutputBytes)
	require.EqualValues(t, maxOutput, w.n)
	allocated := after.TotalAlloc - before.TotalAlloc
	require.Less(t, allocated, uint64(4<<20), "allocated %d bytes while %d flowed", allocated, flood)
}

func TestRunMaxOutput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		size          int
		maxOutput     int64
		wantPassed    int
		wantTruncated bool
	}{
		{name: "no cap", size: 100_000, maxOutput: 0, wantPassed: 100_000},
		{name: "exactly the cap", size: 100_000, maxOutput: 100_000, wantPassed: 100_000},
		{name: "one byte over", size: 100_001, maxOutput: 100_000, wantPassed: 100_000, wantTruncated: true},
		{name: "cap inside the first read", size: 100_000, maxOutput: 10, wantPassed: 10, wantTruncated: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			res, err := Run(context.Background(), Spec{
				Path: fixture(t, "floods.sh"), Args: []string{strconv.Itoa(tc.size)},
				Env: testEnv, Output: &out, MaxOutput: tc.maxOutput,
			})
			require.NoError(t, err)
			require.Equal(t, 0, res.ExitCode)
			require.Equal(t, tc.wantPassed, out.Len())
			require.EqualValues(t, tc.size, res.OutputBytes)
			require.Equal(t, tc.wantTruncated, res.Truncated)
		})
	}
}

func TestRunNilOutputDiscards(t *testing.T) {
	t.Parallel()
	res, err := Run(context.Background(), Spec{Path: fixture(t, "floods.sh"), Args: []string{"50000"}, Env: testEnv, MaxOutput: 100})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode)
	require.EqualValues(t, 50000, res.OutputBytes)
	require.True(t, res.Truncated)
}

// failingWriter accepts n bytes, then fails.
type failingWriter struct{ n int }

var errDiskFull = errors.New("disk full")

func (w *failingWriter) Write(p []byte) (int, error) {
	if len(p) > w.n {
		k := w.n
		w.n = 0
		return k, errDiskFull
	}
	w.n -= len(p)
	return len(p), nil
}

// A failing Output does not block the child: the rest is read and discarded.
func TestRunOutputWriteError(t *testing.T) {
	t.Parallel()
	w := &failingWriter{n: 1000}
	res, err := Run(context.Background(), Spec{Path: fixture(t, "floods.sh"), Args: []string{"1000000"}, Env: testEnv, Output: w})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode)
	require.ErrorIs(t, res.OutputErr, errDiskFull)
	require.EqualValues(t, 1000000, res.OutputBytes)
	require.False(t, res.Truncated)
}

func TestOutput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		spec          Spec
		wantOutput    string
		wantLen       int
		wantTruncated bool
	}{
		{
			name:       "interleaved",
			spec:       Spec{Path: "succeeds.sh", Args: []string{"x"}},
			wantOutput: "out1\nerr1\nout2\nerr2\nargs:x|\n",
		},
		{
			name:          "capped at 1 MiB whatever Spec says",
			spec:          Spec{Path: "floods.sh", Args: []string{strconv.Itoa(2 << 20)}, Output: io.Discard, MaxOutput: 10},
			wantLen:       MaxCapturedOutput,
			wantTruncated: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.spec.Path = fixture(t, tc.spec.Path)
			tc.spec.Env = testEnv
			out, res, err := Output(context.Background(), tc.spec)
			require.NoError(t, err)
			require.Equal(t, 0, res.ExitCode)
			require.Equal(t, tc.wantTruncated, res.Truncated)
			if tc.wantOutput != "" {
				require.Equal(t, tc.wantOutput, string(out))
			}
			if tc.wantLen != 0 {
				require.Len(t, out, tc.wantLen)
			}
		})
	}
}

func TestOutputStartError(t *testing.T) {
	t.Parallel()
	out, _, err := Output(context.Background(), Spec{Path: "/does/not/exist"})
	require.ErrorIs(t, err, fs.ErrNotExist)
	require.Empty(t, out)
}

// Many concurrent runs keep their outputs apart (and give -race something to look at).
func TestRunConcurrent(t *testing.T) {
	t.Parallel()
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			arg := fmt.Sprintf("run-%d", i)
			out, res, err := Output(context.Background(), Spec{Path: fixture(t, "succeeds.sh"), Args: []string{arg}, Env: testEnv, Timeout: time.Minute})
			if !(err == nil && res.ExitCode == 0 && string(out) == "out1\nerr1\nout2\nerr2\nargs:"+arg+"|\n") {
				t.Errorf("run %d: err %v, result %+v, output %q", i, err, res, out)
			}
		}()
	}
	wg.Wait()
}

// Env nil is an empty environment, not the caller's.
func TestRunNilEnvIsEmpty(t *testing.T) {
	t.Parallel()
	require.NotEmpty(t, os.Environ())
	out, res, err := Output(context.Background(), Spec{Path: "/usr/bin/env"})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode)
	require.Empty(t, string(out))
}

func TestRunInterpreterErrorIsTyped(t *testing.T) {
	t.Parallel()
	_, err := Run(context.Background(), Spec{Path: fixture(t, "crlf.sh")})
	var ie *InterpreterError
	require.ErrorAs(t, err, &ie)
	require.Equal(t, "/bin/sh\r", ie.Interpreter)
	require.True(t, ie.CRLF)
}

func TestShebang(t *testing.T) {
	t.Parallel()
	tests := []struct {
		head       string
		interp     string
		crlf, isOK bool
	}{
		{"#!/bin/bash\necho", "/bin/bash", false, true},
		{"#!/bin/bash\r\necho", "/bin/bash\r", true, true},
		{"#! /usr/bin/env bash\r\n", "/usr/bin/env", true, true},
		{"#!\t/bin/sh -e\n", "/bin/sh", false, true},
		{"#!/bin/sh", "/bin/sh", false, true}, // no newline within the bytes read
		{"#!\n", "", false, false},
		{"echo hi\n", "", false, false},
		{"", "", false, false},
	}
	for _, tc := range tests {
		interp, crlf, ok := Shebang([]byte(tc.head))
		require.Equal(t, tc.interp, interp, "%q", tc.head)
		require.Equal(t, tc.crlf, crlf, "%q", tc.head)
		require.Equal(t, tc.isOK, ok, "%q", tc.head)
	}
}
