package testenv

import (
	"net"
	"sync"
)

// connServer is the accept loop the test proxies share: each connection is handled in its own
// goroutine; Close closes the listener and every open connection, then waits for the handlers.
type connServer struct {
	ln     net.Listener
	handle func(net.Conn)
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	done   chan struct{} // closed by Close: handlers that wait (stalls) give up on it
	wg     sync.WaitGroup
}

// newConnServer makes the server; start begins accepting. They are apart so that the owner
// can keep the pointer before any handler, which may use it, runs.
func newConnServer(ln net.Listener, handle func(net.Conn)) *connServer {
	return &connServer{ln: ln, handle: handle, conns: map[net.Conn]struct{}{}, done: make(chan struct{})}
}

func (s *connServer) start() {
	s.wg.Add(1)
	go s.serve()
}

func (s *connServer) serve() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		if !s.track(c) {
			continue
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer s.untrack(c)
			s.handle(c)
		}()
	}
}

func (s *connServer) track(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		_ = c.Close()
		return false
	}
	s.conns[c] = struct{}{}
	return true
}

func (s *connServer) untrack(c net.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.conns, c)
	_ = c.Close()
}

// Close is idempotent.
func (s *connServer) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	close(s.done)
	_ = s.ln.Close()
	for c := range s.conns {
		_ = c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}
