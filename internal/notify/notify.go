// Package notify tells systemd how the boot is going through sd_notify (go-systemd): READY=1,
// STATUS= and EXTEND_TIMEOUT_USEC=. Outside systemd (no NOTIFY_SOCKET) every call is a no-op.
//
// It never sends STOPPING=1: the daemon's unit is Type=notify with RemainAfterExit=yes, and
// systemd (252, tested under a real one in internal/systemdtest) takes STOPPING=1 as the start
// of a stop, so the unit would end inactive (dead) rather than active (exited) after a
// successful boot, and the next start of slurmd (which requires it) would run it again.
package notify

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
)

// Notifier is what the daemon tells systemd.
type Notifier interface {
	Ready() error
	Status(s string) error
	ExtendTimeout(d time.Duration) error
}

// Systemd sends to $NOTIFY_SOCKET.
type Systemd struct{}

// New returns the systemd notifier.
func New() Notifier { return Systemd{} }

// Enabled reports whether NOTIFY_SOCKET is set (the process runs under systemd as a
// Type=notify service).
func Enabled() bool { return os.Getenv("NOTIFY_SOCKET") != "" }

// send writes one assignment to $NOTIFY_SOCKET, leaving the variable in the environment
// (unsetEnvironment false) so that every later notification reaches it too. Scripts do not
// inherit it: they run with a clean environment.
func send(state string) error {
	if _, err := daemon.SdNotify(false, state); err != nil {
		return fmt.Errorf("sd_notify %s: %w", state, err)
	}
	return nil
}

// Ready sends READY=1.
func (Systemd) Ready() error { return send(daemon.SdNotifyReady) }

// Status sends STATUS=s (one line).
func (Systemd) Status(s string) error { return send("STATUS=" + oneLine(s)) }

// ExtendTimeout sends EXTEND_TIMEOUT_USEC=d in microseconds: systemd then allows d more from
// now before the start (or stop) times out, even beyond TimeoutStartSec=.
func (Systemd) ExtendTimeout(d time.Duration) error {
	return send("EXTEND_TIMEOUT_USEC=" + strconv.FormatInt(d.Microseconds(), 10))
}

func oneLine(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c == '\n' || c == '\r' {
			b[i] = ' '
		}
	}
	return string(b)
}

// Nop is a Notifier that sends nothing (for commands not run by systemd, and tests).
type Nop struct{}

// Ready does nothing.
func (Nop) Ready() error { return nil }

// Status does nothing.
func (Nop) Status(string) error { return nil }

// ExtendTimeout does nothing.
func (Nop) ExtendTimeout(time.Duration) error { return nil }

// IsJournal reports whether w is the stream systemd connected to the journal: a file whose
// device and inode are those of $JOURNAL_STREAM ("DEV:INO", set for a service whose stderr or
// stdout goes to the journal; systemd.exec(5)). A service's own stderr is, unless its unit
// says otherwise.
func IsJournal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	dev, ino, ok := strings.Cut(os.Getenv("JOURNAL_STREAM"), ":")
	if !ok {
		return false
	}
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && strconv.FormatUint(uint64(st.Dev), 10) == dev && strconv.FormatUint(st.Ino, 10) == ino
}
