// Package notify tells systemd how the boot is going through sd_notify (go-systemd): READY=1,
// STATUS=, EXTEND_TIMEOUT_USEC= and STOPPING=1. Outside systemd (no NOTIFY_SOCKET) every call
// is a no-op.
package notify

import (
	"strconv"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
)

// Notifier is what the daemon tells systemd.
type Notifier interface {
	Ready() error
	Status(s string) error
	ExtendTimeout(d time.Duration) error
	Stopping() error
}

// Systemd sends to $NOTIFY_SOCKET.
type Systemd struct{}

// New returns the systemd notifier.
func New() Notifier { return Systemd{} }

func send(state string) error {
	_, err := daemon.SdNotify(false, state)
	return err
}

// Ready sends READY=1.
func (Systemd) Ready() error { return send(daemon.SdNotifyReady) }

// Status sends STATUS=s (one line).
func (Systemd) Status(s string) error { return send("STATUS=" + oneLine(s)) }

// ExtendTimeout sends EXTEND_TIMEOUT_USEC=d.
func (Systemd) ExtendTimeout(d time.Duration) error {
	return send("EXTEND_TIMEOUT_USEC=" + strconv.FormatInt(d.Microseconds(), 10))
}

// Stopping sends STOPPING=1.
func (Systemd) Stopping() error { return send(daemon.SdNotifyStopping) }

func oneLine(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c == '\n' || c == '\r' {
			b[i] = ' '
		}
	}
	return string(b)
}
