package testenv

import (
	"context"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// LatencyProxy is a keep-alive HTTP reverse proxy on 127.0.0.1 in front of one upstream
// (versitygw) that delays every request by Latency before forwarding it, as a distant S3
// endpoint would, and counts what it sees: requests by method and path, and client
// connections (so a client that reuses its connections shows it). The Host header is kept, so
// SigV4 signatures made for the proxy's address verify upstream.
type LatencyProxy struct {
	URL     string // http://127.0.0.1:PORT
	Latency time.Duration

	srv *http.Server
	ln  net.Listener

	mu       sync.Mutex
	requests map[string]int // "GET /bucket/key" → count
	conns    int
	active   int
	peak     int
}

// StartLatencyProxy starts a proxy for upstream (an http:// URL) adding latency to every
// request; it is closed when the test ends.
func StartLatencyProxy(t testing.TB, upstream string, latency time.Duration) *LatencyProxy {
	t.Helper()
	target, err := url.Parse(upstream)
	if err != nil {
		t.Fatalf("testenv: latency proxy upstream %q: %v", upstream, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testenv: listen for latency proxy: %v", err)
	}
	p := &LatencyProxy{URL: "http://" + ln.Addr().String(), Latency: latency, ln: ln, requests: map[string]int{}}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = r.In.Host // the client signed the proxy's host
		},
		Transport: &http.Transport{
			DialContext:         (&net.Dialer{Timeout: time.Minute}).DialContext, // transparent on a very busy machine
			MaxIdleConns:        1024,
			MaxIdleConnsPerHost: 1024,
			IdleConnTimeout:     30 * time.Second,
		},
		FlushInterval: -1,
	}
	p.srv = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			p.mu.Lock()
			p.requests[r.Method+" "+r.URL.Path]++
			p.active++
			p.peak = max(p.peak, p.active)
			p.mu.Unlock()
			defer func() {
				p.mu.Lock()
				p.active--
				p.mu.Unlock()
			}()
			if p.Latency > 0 {
				tm := time.NewTimer(p.Latency)
				select {
				case <-tm.C:
				case <-r.Context().Done():
					tm.Stop()
					return
				}
			}
			rp.ServeHTTP(w, r)
		}),
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				p.mu.Lock()
				p.conns++
				p.mu.Unlock()
			}
		},
		ReadHeaderTimeout: 30 * time.Second,
	}
	go func() { _ = p.srv.Serve(ln) }()
	t.Cleanup(p.Close)
	return p
}

// Close stops the proxy.
func (p *LatencyProxy) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = p.srv.Shutdown(ctx)
}

// Count is how many requests with this method had a path containing match ("" for all).
func (p *LatencyProxy) Count(method, match string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for k, c := range p.requests {
		m, path, _ := strings.Cut(k, " ")
		if (method == "" || m == method) && strings.Contains(path, match) {
			n += c
		}
	}
	return n
}

// PerPath returns the count of each "METHOD path" seen.
func (p *LatencyProxy) PerPath() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]int, len(p.requests))
	for k, c := range p.requests {
		out[k] = c
	}
	return out
}

// Connections is how many client connections the proxy accepted.
func (p *LatencyProxy) Connections() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.conns
}

// PeakConcurrent is the most requests the proxy handled at once.
func (p *LatencyProxy) PeakConcurrent() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.peak
}

// Reset zeroes the counters.
func (p *LatencyProxy) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.requests, p.conns, p.peak = map[string]int{}, 0, 0
}
