package slurm

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

var (
	// ErrNotConfigured means Slurm is not set up on this node: no scontrol, SLURM_CONF names a
	// file that does not exist, or scontrol finds no configuration (ErrNoConfig). SPEC §8:
	// nodeReady then runs at once.
	ErrNotConfigured = errors.New("slurm is not configured on this node")
	// ErrNoConfig is the part of ErrNotConfigured that may be only momentary: scontrol ran but
	// found no usable configuration (no slurm.conf, and a configless fetch failed, or the file
	// is empty or unreadable as a configuration). On a configless node that is the case until
	// slurmd has fetched its configuration, so WaitRegistered gives it NoConfigGrace.
	// errors.Is(ErrNoConfig, ErrNotConfigured) holds.
	ErrNoConfig = fmt.Errorf("%w: scontrol found no configuration", ErrNotConfigured)
	// ErrUnreachable means scontrol has a configuration but could not reach slurmctld: a
	// transient condition, polled through.
	ErrUnreachable = errors.New("slurm controller unreachable")
	// ErrNodeNotFound means the controller does not know the node (yet).
	ErrNodeNotFound = errors.New("node not known to the slurm controller")
	// ErrForeignDrain means the node is drained or down for a reason this client was not asked
	// to own (an operator's, or Slurm's own): Drain and Resume left it alone.
	ErrForeignDrain = errors.New("node drained or down for another reason; left alone")
	// ErrRegistrationTimeout is matched (errors.Is) by the *TimeoutError of WaitRegistered.
	ErrRegistrationTimeout = errors.New("node did not register with the slurm controller in time")
)

// CommandError is an scontrol invocation that failed.
type CommandError struct {
	Args     []string // scontrol's arguments
	ExitCode int      // -1 when killed by a signal
	Signal   string   // "KILL", "TERM" when killed by one
	TimedOut bool     // the call's own time bound (Options.CallTimeout) expired
	Canceled bool     // the context was done
	Output   string   // stdout and stderr, trimmed
	// Kind is what the output says went wrong (ErrNoConfig, ErrUnreachable, ErrNodeNotFound),
	// nil when not recognised. errors.Is sees it.
	Kind error
}

func (e *CommandError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "scontrol %s: ", strings.Join(e.Args, " "))
	switch {
	case e.TimedOut:
		b.WriteString("timed out")
	case e.Canceled:
		b.WriteString("cancelled")
	case e.Signal != "":
		fmt.Fprintf(&b, "killed by signal %s", e.Signal)
	default:
		fmt.Fprintf(&b, "exit status %d", e.ExitCode)
	}
	if e.Kind != nil {
		fmt.Fprintf(&b, " (%v)", e.Kind)
	}
	if e.Output != "" {
		out := e.Output
		if len(out) > 500 {
			out = out[len(out)-500:]
		}
		fmt.Fprintf(&b, ": %s", out)
	}
	return b.String()
}

func (e *CommandError) Unwrap() error { return e.Kind }

// TimeoutError is WaitRegistered's deadline expiring before the node registered. It does not
// unwrap to LastErr: a timeout is a timeout, whatever the last poll saw.
type TimeoutError struct {
	Node    string
	Timeout time.Duration
	Polls   int
	Last    State // the last state read, zero when none could be
	LastErr error // the error of the last poll, nil when it read a state
}

func (e *TimeoutError) Error() string {
	last := "never read its state"
	switch {
	case e.LastErr != nil:
		last = "last poll: " + e.LastErr.Error()
	case len(e.Last.States) > 0:
		last = "last state " + e.Last.String()
	}
	return fmt.Sprintf("node %s not registered with the slurm controller within %s (%d polls; %s)", e.Node, e.Timeout, e.Polls, last)
}

// Is makes errors.Is(err, ErrRegistrationTimeout) hold.
func (e *TimeoutError) Is(target error) bool { return target == ErrRegistrationTimeout }

// classify reads scontrol's output for what went wrong. The messages are Slurm's (22.05, and
// unchanged in later releases): see testdata/err-*.txt.
func classify(out string) error {
	switch {
	case strings.Contains(out, "Unable to contact slurm controller"):
		return ErrUnreachable
	case strings.Contains(out, "Could not establish a configuration source"),
		strings.Contains(out, "Unable to process configuration file"),
		strings.Contains(out, "cannot stat file"):
		return ErrNoConfig
	case strings.Contains(out, "Invalid node name specified"),
		strings.HasPrefix(out, "Node ") && strings.Contains(out, " not found"):
		return ErrNodeNotFound
	}
	return nil
}
