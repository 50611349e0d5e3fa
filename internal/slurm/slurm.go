// Package slurm is the executor's Slurm client: it reads a node's state (is it registered with
// the controller?), drains and resumes it and sets its comment, all through scontrol run by
// internal/proc. It never writes Slurm's configuration.
package slurm

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/proc"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/programs"
)

const (
	// DefaultScontrol is the scontrol looked up when Options.Scontrol is empty.
	DefaultScontrol = programs.Scontrol
	// DefaultPATH is the PATH scontrol is looked up in and run with: the executor's fixed PATH
	// (SPEC §4) plus /opt/slurm/bin, where AWS PCS images install Slurm.
	DefaultPATH = programs.SlurmPATH
	// DefaultPollInterval is the registration poll interval of SPEC §8.
	DefaultPollInterval = 2 * time.Second
	// DefaultCallTimeout bounds one scontrol call. An unreachable controller makes scontrol
	// retry for a few seconds (MessageTimeout); a missing included file makes it retry for 60.
	DefaultCallTimeout = 30 * time.Second
	// DefaultNoConfigGrace is how long WaitRegistered polls through ErrNoConfig before it
	// returns it: long enough for a configless slurmd, started moments before, to fetch the
	// configuration that scontrol then reads.
	DefaultNoConfigGrace = 10 * time.Second
	// killGrace is the SIGTERM-to-SIGKILL wait of an scontrol call cut short.
	killGrace = 2 * time.Second
)

// envPassed are the variables of the executor's environment passed to scontrol.
var envPassed = []string{"SLURM_CONF", "SLURM_CONF_SERVER"}

// Options configure a Client. The zero value runs "scontrol" from DefaultPATH with SLURM_CONF
// and SLURM_CONF_SERVER taken from this process's environment.
type Options struct {
	// Scontrol is a path, or a name looked up in the PATH of Env. "" means "scontrol".
	Scontrol string
	// Env is the whole environment of scontrol. nil means DefaultEnv().
	Env []string
	// CallTimeout bounds one scontrol call; 0 means DefaultCallTimeout.
	CallTimeout time.Duration
	// NoConfigGrace: see DefaultNoConfigGrace; 0 means the default, negative means none.
	NoConfigGrace time.Duration
}

// Client runs scontrol.
type Client struct {
	scontrol    string
	env         []string
	callTimeout time.Duration
	noConfig    time.Duration
	slurmdStart time.Time // see SlurmdStartedAt
}

// DefaultEnv is a clean environment for scontrol: PATH=DefaultPATH, plus SLURM_CONF and
// SLURM_CONF_SERVER when this process has them.
func DefaultEnv() []string {
	env := []string{"PATH=" + DefaultPATH}
	for _, k := range envPassed {
		if v, ok := os.LookupEnv(k); ok && v != "" {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// New returns a client.
func New(opts Options) *Client {
	c := &Client{
		scontrol:    opts.Scontrol,
		env:         opts.Env,
		callTimeout: opts.CallTimeout,
		noConfig:    opts.NoConfigGrace,
	}
	if c.scontrol == "" {
		c.scontrol = DefaultScontrol
	}
	if c.env == nil {
		c.env = DefaultEnv()
	}
	if c.callTimeout <= 0 {
		c.callTimeout = DefaultCallTimeout
	}
	if c.noConfig == 0 {
		c.noConfig = DefaultNoConfigGrace
	} else if c.noConfig < 0 {
		c.noConfig = 0
	}
	return c
}

func (c *Client) getenv(key string) (string, bool) {
	// The last assignment wins, as in os/exec.
	for i := len(c.env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(c.env[i], "="); ok && k == key {
			return v, true
		}
	}
	return "", false
}

// resolve finds scontrol: a path as given, a name in the PATH of the client's environment
// (programs.Look: never a relative directory of PATH).
func (c *Client) resolve() (string, error) {
	path, _ := c.getenv("PATH")
	p, err := programs.Look(c.scontrol, path)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrNotConfigured, err)
	}
	return p, nil
}

// precheck reports a SLURM_CONF naming a file that does not exist at once: scontrol would
// retry reading it for 60 seconds before saying so.
func (c *Client) precheck() error {
	conf, ok := c.getenv("SLURM_CONF")
	if !ok || conf == "" {
		return nil
	}
	fi, err := os.Stat(conf)
	if err != nil {
		return fmt.Errorf("%w: SLURM_CONF=%s: %w", ErrNotConfigured, conf, err)
	}
	if fi.IsDir() {
		return fmt.Errorf("%w: SLURM_CONF=%s is a directory", ErrNotConfigured, conf)
	}
	return nil
}

// run runs scontrol with args and returns its output when it exits 0.
func (c *Client) run(ctx context.Context, args ...string) ([]byte, error) {
	if err := c.precheck(); err != nil {
		return nil, err
	}
	path, err := c.resolve()
	if err != nil {
		return nil, err
	}
	out, res, err := proc.Output(ctx, proc.Spec{
		Path:      path,
		Args:      args,
		Env:       c.env,
		Dir:       "/",
		Timeout:   c.callTimeout,
		KillGrace: killGrace,
	})
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
			return nil, fmt.Errorf("%w: %w", ErrNotConfigured, err)
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("scontrol %s: %w", strings.Join(args, " "), ctx.Err())
		}
		return nil, err
	}
	if !res.Failed() && !res.TimedOut && !res.Canceled {
		return out, nil
	}
	text := strings.TrimSpace(string(out))
	return out, &CommandError{
		Args:     args,
		ExitCode: res.ExitCode,
		Signal:   res.Signal,
		TimedOut: res.TimedOut,
		Canceled: res.Canceled,
		Output:   text,
		Kind:     classify(text),
	}
}

func checkNode(node string) error {
	if node == "" {
		return errors.New("slurm: empty node name")
	}
	if strings.ContainsAny(node, " \t\n,[]=") || strings.HasPrefix(node, "-") {
		return fmt.Errorf("slurm: %q is not a single node name", node)
	}
	return nil
}

// NodeState reads the node's state with `scontrol --all --future show node NODE` (--future so
// that a FUTURE node shows as such rather than as not found). Errors: ErrNotConfigured (and
// ErrNoConfig), or a *CommandError wrapping ErrUnreachable, ErrNodeNotFound or nothing.
func (c *Client) NodeState(ctx context.Context, node string) (State, error) {
	if err := checkNode(node); err != nil {
		return State{}, err
	}
	out, err := c.run(ctx, "--all", "--future", "show", "node", node)
	if err != nil {
		return State{}, err
	}
	return ParseNode(out, node)
}

// WaitRegistered checks NodeState on the registration schedule (ScheduleWait: fast at first,
// as slurmd has just been allowed to start, then every interval; 0 means DefaultPollInterval)
// until the node is Registered, and returns nil then. timeout <= 0 means "do not wait": it returns nil at once
// without running scontrol (SPEC §8, --registration-timeout 0). It returns ErrNotConfigured at
// once when scontrol or SLURM_CONF's file is missing, and ErrNoConfig once scontrol has found
// no configuration for NoConfigGrace; a *TimeoutError (errors.Is ErrRegistrationTimeout) when
// timeout passes; ctx's error, wrapped, when ctx is done. Every other error (controller
// unreachable, node not yet known, scontrol failing) is transient and polled through. onPoll,
// when not nil, is called after every poll with what it read.
func (c *Client) WaitRegistered(ctx context.Context, node string, interval, timeout time.Duration, onPoll func(State, error)) error {
	return c.waitRegistered(ctx, node, c.slurmdStart, interval, timeout, onPoll)
}

// SlurmdStartedAt tells the client when slurmd was allowed to start (the daemon's READY=1):
// WaitRegistered then counts its schedule from that moment, and its first check comes
// FastFirstWait after it rather than at once (slurmd cannot have registered yet). Without it,
// slurmd started at some earlier moment (a nodeReady unit ordered after slurmd.service) and
// the first check is at once.
func (c *Client) SlurmdStartedAt(t time.Time) { c.slurmdStart = t }

func (c *Client) waitRegistered(ctx context.Context, node string, slurmdStart time.Time, interval, timeout time.Duration, onPoll func(State, error)) error {
	if timeout <= 0 {
		return nil
	}
	if err := checkNode(node); err != nil {
		return err
	}
	if interval <= 0 {
		interval = DefaultPollInterval
	}
	deadline := time.Now().Add(timeout)
	var (
		polls        int
		skip         int // waits of the schedule that passed before the first check
		last         State
		lastErr      error
		noConfigFrom time.Time
	)
	if !slurmdStart.IsZero() {
		skip = 1
		if wait := min(time.Until(slurmdStart.Add(FastFirstWait)), time.Until(deadline)); wait > 0 {
			select {
			case <-ctx.Done():
				return fmt.Errorf("wait for node %s to register: %w", node, ctx.Err())
			case <-time.After(wait):
			}
		}
	}
	for {
		callCtx, cancel := context.WithDeadline(ctx, deadline)
		st, err := c.NodeState(callCtx, node)
		cutShort := err != nil && callCtx.Err() != nil
		cancel()
		if ctx.Err() != nil {
			return fmt.Errorf("wait for node %s to register: %w", node, ctx.Err())
		}
		if cutShort {
			// The deadline ended the call: it says nothing about the node, so the previous
			// poll's result stands (unless there was none).
			if polls == 0 {
				lastErr = err
			}
			return &TimeoutError{Node: node, Timeout: timeout, Polls: polls, Last: last, LastErr: lastErr}
		}
		polls++
		if onPoll != nil {
			onPoll(st, err)
		}
		switch {
		case err == nil && Registered(st):
			return nil
		case errors.Is(err, ErrNoConfig):
			if noConfigFrom.IsZero() {
				noConfigFrom = time.Now()
			}
			if time.Since(noConfigFrom) >= c.noConfig {
				return err
			}
		case errors.Is(err, ErrNotConfigured):
			return err
		default:
			noConfigFrom = time.Time{}
		}
		last, lastErr = st, err
		wait := min(ScheduleWait(interval, polls+skip), time.Until(deadline))
		if wait <= 0 {
			return &TimeoutError{Node: node, Timeout: timeout, Polls: polls, Last: last, LastErr: lastErr}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for node %s to register: %w", node, ctx.Err())
		case <-time.After(wait):
		}
		if !time.Now().Before(deadline) {
			return &TimeoutError{Node: node, Timeout: timeout, Polls: polls, Last: last, LastErr: lastErr}
		}
	}
}

// held reports whether the node is kept from new jobs: drained (or draining), or down for a
// reason other than not responding.
func held(st State) bool {
	return st.Drained() || (st.Base() == "DOWN" && !st.Has("NOT_RESPONDING"))
}

// Drain drains the node with reason (`scontrol update NodeName=N State=DRAIN Reason=...`).
// A node already drained with exactly this reason is left as it is (nil). A node drained, or
// down, for any other reason is left alone and ErrForeignDrain returned: draining it again
// would overwrite the operator's reason, and a later Resume would then undo their drain.
func (c *Client) Drain(ctx context.Context, node, reason string) error {
	if reason == "" {
		return errors.New("slurm: drain needs a reason")
	}
	st, err := c.NodeState(ctx, node)
	if err != nil {
		return err
	}
	if held(st) {
		if st.Reason == reason {
			return nil
		}
		return fmt.Errorf("drain %s: %w (state %s, reason %q)", node, ErrForeignDrain, st, st.Reason)
	}
	if _, err := c.run(ctx, "update", "NodeName="+node, "State=DRAIN", "Reason="+reason); err != nil {
		return err
	}
	return nil
}

// ReplaceDrain changes the reason of a drain this client set (oldReason) to newReason without
// lifting it, so no job can start in between; a node not held at all is drained with
// newReason. A node drained or down for any other reason is left alone (ErrForeignDrain).
func (c *Client) ReplaceDrain(ctx context.Context, node, oldReason, newReason string) error {
	if newReason == "" {
		return errors.New("slurm: drain needs a reason")
	}
	st, err := c.NodeState(ctx, node)
	if err != nil {
		return err
	}
	if held(st) {
		switch st.Reason {
		case newReason:
			return nil
		case oldReason:
		default:
			return fmt.Errorf("drain %s: %w (state %s, reason %q)", node, ErrForeignDrain, st, st.Reason)
		}
	}
	if _, err := c.run(ctx, "update", "NodeName="+node, "State=DRAIN", "Reason="+newReason); err != nil {
		return err
	}
	return nil
}

// Resume resumes the node (`scontrol update NodeName=N State=RESUME`) only when it is drained
// (or down) with exactly the reason onlyIfReason, the one Drain set. A node drained or down for
// another reason (an operator's) is left alone and ErrForeignDrain returned; a node no longer
// held at all (someone resumed it) is left alone and nil returned. Between reading the state
// and resuming, an operator could still re-drain the node with another reason; that window is
// one scontrol call wide.
func (c *Client) Resume(ctx context.Context, node, onlyIfReason string) error {
	st, err := c.NodeState(ctx, node)
	if err != nil {
		return err
	}
	if !held(st) {
		return nil
	}
	if onlyIfReason == "" || st.Reason != onlyIfReason {
		return fmt.Errorf("resume %s: %w (state %s, reason %q)", node, ErrForeignDrain, st, st.Reason)
	}
	if _, err := c.run(ctx, "update", "NodeName="+node, "State=RESUME"); err != nil {
		return err
	}
	return nil
}

// SetComment sets the node's Comment (`scontrol update NodeName=N Comment=...`); "" clears it.
func (c *Client) SetComment(ctx context.Context, node, comment string) error {
	if err := checkNode(node); err != nil {
		return err
	}
	if strings.ContainsAny(comment, "\n\r") {
		return errors.New("slurm: a node comment is one line")
	}
	if _, err := c.run(ctx, "update", "NodeName="+node, "Comment="+comment); err != nil {
		return err
	}
	return nil
}
