package testenv

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Fault is what a FaultProxy does with one HTTP request.
type Fault int

const (
	// Pass forwards the request upstream and the whole response back, faithfully.
	Pass Fault = iota
	// ServerError answers FaultOptions.Status (503 by default) without asking upstream.
	ServerError
	// Reset reads the request and resets the connection (TCP RST), answering nothing.
	Reset
	// ResetMidBody forwards the status line, the headers and half the body, then resets.
	ResetMidBody
	// Stall reads the request and never answers: the connection stays open and silent until
	// the client gives up (or FaultOptions.MaxStall passes, or the proxy is closed).
	Stall
	// StallMidBody forwards the headers and half the body, then stays silent like Stall.
	StallMidBody
	// Truncate forwards the headers (Content-Length unchanged) and half the body, then closes
	// the connection cleanly (FIN): a body shorter than its Content-Length.
	Truncate
	// Drip forwards the whole response, the body DripChunk bytes every DripEvery.
	Drip
	// DripThenCut drips half the body, then closes cleanly (a slow, truncated body).
	DripThenCut
	// Corrupt forwards the response with one body byte changed (same length, wrong content).
	Corrupt
)

var faultNames = map[Fault]string{
	Pass: "pass", ServerError: "5xx", Reset: "reset", ResetMidBody: "reset-mid-body",
	Stall: "stall", StallMidBody: "stall-mid-body", Truncate: "truncated-body",
	Drip: "slow-drip", DripThenCut: "slow-drip-then-cut", Corrupt: "corrupt-byte",
}

func (f Fault) String() string {
	if s, ok := faultNames[f]; ok {
		return s
	}
	return "fault(" + strconv.Itoa(int(f)) + ")"
}

// FaultOptions configure a FaultProxy.
type FaultOptions struct {
	// Upstream is the host:port requests are forwarded to (on loopback).
	Upstream string
	// UpstreamTLS, when set, is the TLS configuration for connecting upstream (a TLSServer:
	// RootCAs its CertPool); nil means plain HTTP upstream (versitygw).
	UpstreamTLS *tls.Config
	// TLS makes the proxy itself serve HTTPS with a certificate of its own, freshly generated
	// CA (CAFile); clients must trust that CA (SSL_CERT_FILE).
	TLS bool
	// Status is the answer of ServerError; 0 means 503.
	Status int
	// DripChunk and DripEvery pace Drip and DripThenCut; 0 means 16 bytes every 20 ms.
	DripChunk int
	DripEvery time.Duration
	// MaxStall bounds Stall and StallMidBody; 0 means until the client or the proxy closes.
	MaxStall time.Duration
}

// ProxyRequest is one request the proxy saw.
type ProxyRequest struct {
	Method string
	Path   string
	Query  string
	Header http.Header
	Fault  Fault
	At     time.Time
}

type faultRule struct {
	match  string  // substring of the URL path
	first  []Fault // consumed one per request
	then   Fault   // afterwards
	served int
}

// FaultProxy is an HTTP(S) proxy on 127.0.0.1 in front of one upstream server (versitygw or a
// TLSServer) that injects faults into chosen requests: 5xx answers, connection resets, stalls,
// truncated bodies, slow drips and corrupted bytes. Each connection carries one request (the
// proxy answers with Connection: close), so every attempt of a client is a request of its own.
// Requests no rule matches are passed through. It records every request, with its headers.
type FaultProxy struct {
	URL    string // http(s)://127.0.0.1:PORT, no trailing slash
	Addr   string // 127.0.0.1:PORT
	CAFile string // with TLS: the CA of the proxy's certificate (PEM), for SSL_CERT_FILE

	opts FaultOptions
	srv  *connServer

	mu       sync.Mutex
	rules    []*faultRule
	reqs     []ProxyRequest
	injected map[Fault]int
	active   int
}

// StartFaultProxy starts a fault-injecting proxy for opts.Upstream; it is closed when the test
// ends.
func StartFaultProxy(t testing.TB, opts FaultOptions) *FaultProxy {
	t.Helper()
	if opts.Status == 0 {
		opts.Status = http.StatusServiceUnavailable
	}
	if opts.DripChunk <= 0 {
		opts.DripChunk = 16
	}
	if opts.DripEvery <= 0 {
		opts.DripEvery = 20 * time.Millisecond
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testenv: listen for fault proxy: %v", err)
	}
	p := &FaultProxy{opts: opts, Addr: ln.Addr().String(), injected: map[Fault]int{}}
	scheme := "http"
	if opts.TLS {
		ca, leaf, err := newCertificates()
		if err != nil {
			ln.Close()
			t.Fatalf("testenv: fault proxy certificates: %v", err)
		}
		p.CAFile = filepath.Join(t.TempDir(), "fault-proxy-ca.pem")
		if err := os.WriteFile(p.CAFile, ca.pem, 0o644); err != nil {
			ln.Close()
			t.Fatalf("testenv: %v", err)
		}
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{leaf},
			MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}})
		scheme = "https"
	}
	p.URL = scheme + "://" + p.Addr
	p.srv = newConnServer(ln, p.handle)
	p.srv.start()
	t.Cleanup(p.Close)
	return p
}

// Inject sets the faults of requests whose URL path contains match: first one fault per
// request from first, then then for every later one. A later call for the same match replaces
// the rule; the first matching rule (in the order they were set) applies.
func (p *FaultProxy) Inject(match string, then Fault, first ...Fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := &faultRule{match: match, first: append([]Fault(nil), first...), then: then}
	for i, old := range p.rules {
		if old.match == match {
			p.rules[i] = r
			return
		}
	}
	p.rules = append(p.rules, r)
}

// Clear removes every rule: everything passes from now on.
func (p *FaultProxy) Clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules = nil
}

func (p *FaultProxy) choose(path string) Fault {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range p.rules {
		if !strings.Contains(path, r.match) {
			continue
		}
		f := r.then
		if r.served < len(r.first) {
			f = r.first[r.served]
		}
		r.served++
		return f
	}
	return Pass
}

// Requests returns the requests whose URL path contains match ("" for all), in order.
func (p *FaultProxy) Requests(match string) []ProxyRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []ProxyRequest
	for _, r := range p.reqs {
		if strings.Contains(r.Path, match) {
			out = append(out, r)
		}
	}
	return out
}

// Injected returns how many faults (anything but Pass) the proxy injected, in all.
func (p *FaultProxy) Injected() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for f, c := range p.injected {
		if f != Pass {
			n += c
		}
	}
	return n
}

// InjectedByFault returns how many times each fault was injected.
func (p *FaultProxy) InjectedByFault() map[Fault]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[Fault]int{}
	for f, c := range p.injected {
		if f != Pass {
			out[f] = c
		}
	}
	return out
}

// Active returns how many requests the proxy is handling right now.
func (p *FaultProxy) Active() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.active
}

// Close stops the proxy and drops every connection, stalled ones included.
func (p *FaultProxy) Close() { p.srv.Close() }

func (p *FaultProxy) handle(c net.Conn) {
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	br := bufio.NewReader(c)
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	f := p.choose(req.URL.Path)
	p.mu.Lock()
	p.reqs = append(p.reqs, ProxyRequest{Method: req.Method, Path: req.URL.Path, Query: req.URL.RawQuery,
		Header: req.Header.Clone(), Fault: f, At: time.Now()})
	p.injected[f]++
	p.active++
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.active--
		p.mu.Unlock()
	}()

	switch f {
	case ServerError:
		body := fmt.Sprintf("injected %d\n", p.opts.Status)
		fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
			p.opts.Status, http.StatusText(p.opts.Status), len(body), body)
		return
	case Reset:
		reset(c)
		return
	case Stall:
		p.stall(c)
		return
	}

	head, body, err := p.forward(req)
	if err != nil {
		msg := "fault proxy: upstream: " + err.Error() + "\n"
		fmt.Fprintf(c, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(msg), msg)
		return
	}
	half := len(body) / 2
	switch f {
	case Pass:
		_, _ = c.Write(append(head, body...))
	case ResetMidBody:
		_, _ = c.Write(append(head, body[:half]...))
		reset(c)
	case StallMidBody:
		_, _ = c.Write(append(head, body[:half]...))
		p.stall(c)
	case Truncate:
		_, _ = c.Write(append(head, body[:half]...))
	case Drip:
		p.drip(c, head, body)
	case DripThenCut:
		p.drip(c, head, body[:half])
	case Corrupt:
		bad := append([]byte(nil), body...)
		if len(bad) > 0 {
			bad[len(bad)/2] ^= 0x20
		}
		_, _ = c.Write(append(head, bad...))
	}
}

// forward sends req upstream on a connection of its own and returns the response's status
// line and headers (Content-Length set to the body's length, Connection: close) and its body.
func (p *FaultProxy) forward(req *http.Request) ([]byte, []byte, error) {
	d := net.Dialer{Timeout: 10 * time.Second}
	var up net.Conn
	var err error
	if p.opts.UpstreamTLS != nil {
		up, err = tls.DialWithDialer(&d, "tcp", p.opts.Upstream, p.opts.UpstreamTLS)
	} else {
		up, err = d.Dial("tcp", p.opts.Upstream)
	}
	if err != nil {
		return nil, nil, err
	}
	defer up.Close()
	_ = up.SetDeadline(time.Now().Add(30 * time.Second))
	req.Close = true
	if err := req.Write(up); err != nil {
		return nil, nil, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(up), req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, err
	}
	var h bytes.Buffer
	fmt.Fprintf(&h, "HTTP/1.1 %s\r\n", resp.Status)
	resp.Header.Del("Transfer-Encoding")
	resp.Header.Del("Connection")
	resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
	resp.Header.Set("Connection", "close")
	if req.Method == http.MethodHead {
		body = nil
	}
	_ = resp.Header.Write(&h)
	h.WriteString("\r\n")
	return h.Bytes(), body, nil
}

func (p *FaultProxy) drip(c net.Conn, head, body []byte) {
	if _, err := c.Write(head); err != nil {
		return
	}
	t := time.NewTicker(p.opts.DripEvery)
	defer t.Stop()
	for len(body) > 0 {
		select {
		case <-p.srv.done:
			return
		case <-t.C:
		}
		n := min(p.opts.DripChunk, len(body))
		if _, err := c.Write(body[:n]); err != nil {
			return
		}
		body = body[n:]
	}
}

// stall keeps c open and silent until the client closes it, MaxStall passes or the proxy
// closes.
func (p *FaultProxy) stall(c net.Conn) {
	gone := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, c)
		close(gone)
	}()
	var limit <-chan time.Time
	if p.opts.MaxStall > 0 {
		tm := time.NewTimer(p.opts.MaxStall)
		defer tm.Stop()
		limit = tm.C
	}
	select {
	case <-gone:
	case <-limit:
	case <-p.srv.done:
	}
	_ = c.Close()
	<-gone
}

// reset closes c with a TCP RST (SO_LINGER 0) rather than a FIN.
func reset(c net.Conn) {
	raw := c
	if tc, ok := c.(*tls.Conn); ok {
		raw = tc.NetConn()
	}
	if tc, ok := raw.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = raw.Close()
}
