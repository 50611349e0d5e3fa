// Package scriptlog writes the per-script log: one file per stage and script, appended on every
// run, each run framed by "[start NAME args=[...] @ UNIX]" and "[end NAME exit=N @ UNIX]" lines
// with the script's stdout and stderr, interleaved in order, between them.
package scriptlog

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/fsutil"
)

// Modes of the log directories and files.
const (
	DirMode  os.FileMode = 0o750
	FileMode os.FileMode = 0o640
	// MaxOutput caps one run's output in the log.
	MaxOutput int64 = 16 << 20
)

// Run is one run's framing in an open log file. It is an io.Writer for the script's output.
type Run struct {
	f       *os.File
	name    string
	lastNL  bool
	written int64
}

// Start opens (creating with DirMode/FileMode) the log at path and writes the start line.
func Start(dir, path, name string, args []string, now time.Time) (*Run, error) {
	if err := fsutil.MkdirAll(dir, DirMode); err != nil {
		return nil, fmt.Errorf("script log %s: %w", path, err)
	}
	f, err := fsutil.OpenAppend(path, FileMode)
	if err != nil {
		return nil, fmt.Errorf("script log: %w", err)
	}
	if args == nil {
		args = []string{}
	}
	a, _ := json.Marshal(args)
	r := &Run{f: f, name: name, lastNL: true}
	if _, err := fmt.Fprintf(f, "[start %s args=%s @ %d]\n", name, a, now.Unix()); err != nil {
		f.Close()
		return nil, fmt.Errorf("script log %s: %w", path, err)
	}
	return r, nil
}

// Write appends script output.
func (r *Run) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n, err := r.f.Write(p)
	r.written += int64(n)
	if n > 0 {
		r.lastNL = p[n-1] == '\n'
	}
	return n, err
}

// Outcome is how a run ended, as the end line shows it.
type Outcome struct {
	ExitCode  int
	Signal    string // "KILL" → exit=signal:KILL
	Truncated bool
}

// End writes the truncation note if any and the end line, and closes the file.
func (r *Run) End(o Outcome, now time.Time) error {
	var b []byte
	if !r.lastNL {
		b = append(b, '\n')
	}
	if o.Truncated {
		b = append(b, "[output truncated after "+strconv.FormatInt(MaxOutput, 10)+" bytes]\n"...)
	}
	exit := strconv.Itoa(o.ExitCode)
	if o.Signal != "" {
		exit = "signal:" + o.Signal
	}
	b = append(b, fmt.Sprintf("[end %s exit=%s @ %d]\n", r.name, exit, now.Unix())...)
	_, err := r.f.Write(b)
	if cerr := r.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Close closes the log without an end line (the run never started).
func (r *Run) Close() { r.f.Close() }
