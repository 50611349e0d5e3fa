package exitcode

import (
	"context"
	"errors"
	"fmt"
	"os"
)

// Error is the one error type that carries an exit code out of the executor. It wraps its
// cause (errors.Is / errors.As see through it); Msg, when set, is what the command line prints
// instead of the cause's own text.
type Error struct {
	Code int
	Msg  string
	Err  error
}

func (e *Error) Error() string {
	switch {
	case e.Msg != "":
		return e.Msg
	case e.Err != nil:
		return e.Err.Error()
	}
	return ""
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Errorf is an *Error with code; the message is formatted as fmt.Errorf does, so a %w verb
// makes the cause unwrappable.
func Errorf(code int, format string, a ...any) error {
	err := fmt.Errorf(format, a...)
	return &Error{Code: code, Msg: err.Error(), Err: errors.Unwrap(err)}
}

// Wrap gives err the exit code code unless it already carries one (the innermost code wins:
// it was set where the failure was understood). A nil err stays nil.
func Wrap(code int, err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	return &Error{Code: code, Err: err}
}

// Code is the exit code err carries: OK for nil, Internal for an error without one.
func Code(err error) int {
	if err == nil {
		return OK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return Internal
}

// Exit is a bare exit code with nothing to print (a stage's result, already reported).
func Exit(code int) error {
	if code == OK {
		return nil
	}
	return &Error{Code: code}
}

// SignalCause is the cancel cause of the command's context when a signal arrived.
type SignalCause struct{ Signal os.Signal }

func (s *SignalCause) Error() string { return "received " + s.Signal.String() }

// Interrupted is the exit code of a run stopped by the signal that cancelled ctx: 130 for
// SIGINT, 143 otherwise (SIGTERM, the systemd stop).
func Interrupted(ctx context.Context) int {
	var sc *SignalCause
	if errors.As(context.Cause(ctx), &sc) && sc.Signal == os.Interrupt {
		return SIGINT
	}
	return SIGTERM
}
