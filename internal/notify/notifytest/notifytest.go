// Package notifytest is a real sd_notify receiver for tests: a unixgram socket to point
// NOTIFY_SOCKET at (in this process or in a child's environment), recording every datagram
// the way systemd would receive it.
package notifytest

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Socket is a listening NOTIFY_SOCKET.
type Socket struct {
	Path string // the socket's path: the value of NOTIFY_SOCKET

	conn *net.UnixConn
	mu   sync.Mutex
	msgs []Message
	wake chan struct{}
	done chan struct{}
}

// Message is one datagram: its lines (such as "READY=1", "STATUS=..."), and when it came.
type Message struct {
	Lines []string
	At    time.Time
}

// Listen opens a socket in a short temporary directory (socket paths are limited to 108 bytes)
// and closes it when the test ends.
func Listen(t testing.TB) *Socket {
	t.Helper()
	dir, err := os.MkdirTemp("", "notify-")
	if err != nil {
		t.Fatalf("notifytest: %v", err)
	}
	path := filepath.Join(dir, "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		os.RemoveAll(dir)
		t.Fatalf("notifytest: listen %s: %v", path, err)
	}
	s := &Socket{Path: path, conn: conn, wake: make(chan struct{}), done: make(chan struct{})}
	go s.read()
	t.Cleanup(func() {
		conn.Close()
		<-s.done
		os.RemoveAll(dir)
	})
	return s
}

// Setenv points this process's NOTIFY_SOCKET at the socket for the rest of the test.
func (s *Socket) Setenv(t testing.TB) {
	t.Helper()
	t.Setenv("NOTIFY_SOCKET", s.Path)
}

func (s *Socket) read() {
	defer close(s.done)
	buf := make([]byte, 64*1024)
	for {
		n, err := s.conn.Read(buf)
		if err != nil {
			return
		}
		m := Message{Lines: strings.Split(strings.TrimRight(string(buf[:n]), "\n"), "\n"), At: time.Now()}
		s.mu.Lock()
		s.msgs = append(s.msgs, m)
		close(s.wake)
		s.wake = make(chan struct{})
		s.mu.Unlock()
	}
}

// Messages returns every datagram received so far.
func (s *Socket) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.msgs...)
}

// Lines returns every line of every datagram received so far, in order.
func (s *Socket) Lines() []string {
	var out []string
	for _, m := range s.Messages() {
		out = append(out, m.Lines...)
	}
	return out
}

// WaitFor waits up to d for a line beginning with prefix (such as "READY=1" or "STATUS=") and
// returns the first such line; ok is false on timeout.
func (s *Socket) WaitFor(prefix string, d time.Duration) (line string, ok bool) {
	deadline := time.After(d)
	for {
		s.mu.Lock()
		for _, m := range s.msgs {
			for _, l := range m.Lines {
				if strings.HasPrefix(l, prefix) {
					s.mu.Unlock()
					return l, true
				}
			}
		}
		wake := s.wake
		s.mu.Unlock()
		select {
		case <-wake:
		case <-deadline:
			return "", false
		}
	}
}
