package exitcode

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestErrorWrapsItsCause(t *testing.T) {
	err := Errorf(Internal, "state %s: %w", "/var/lib/x", fs.ErrPermission)
	require.ErrorIs(t, err, fs.ErrPermission)
	require.Equal(t, "state /var/lib/x: permission denied", err.Error())
	require.Equal(t, Internal, Code(err))

	wrapped := Wrap(Usage, err)
	require.Equal(t, Internal, Code(wrapped), "the innermost code wins")
	require.Equal(t, Usage, Code(Wrap(Usage, errors.New("bad flag"))))
	require.Nil(t, Wrap(Usage, nil))
	require.Equal(t, Internal, Code(errors.New("plain")), "an error without a code is the executor's")
	require.Equal(t, OK, Code(nil))
	require.Nil(t, Exit(OK))
	require.Equal(t, Failed, Code(Exit(Failed)))
	require.Empty(t, Exit(Failed).Error(), "a bare exit code prints nothing")
}

func TestInterrupted(t *testing.T) {
	for sig, want := range map[os.Signal]int{os.Interrupt: SIGINT, syscall.SIGTERM: SIGTERM} {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(&SignalCause{Signal: sig})
		require.Equal(t, want, Interrupted(ctx), "%v", sig)
	}
}

func TestWorst(t *testing.T) {
	require.Equal(t, Terminate, Worst(Failed, Terminate))
	require.Equal(t, Terminate, Worst(Terminate, Failed))
	require.Equal(t, Failed, Worst(OK, Failed))
	require.Equal(t, Internal, Worst(Internal, OK))
	require.Equal(t, Failed, Worst(Internal, Failed))
}
