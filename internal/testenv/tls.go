package testenv

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

// TLSServer is an HTTPS server on 127.0.0.1 with a certificate issued by its own, freshly
// generated certificate authority. The leaf certificate is valid for 127.0.0.1, ::1, localhost
// and *.localhost, so a test may also reach it as https://localhost.:PORT/ (a name that
// net/http's ProxyFromEnvironment does not exempt from HTTPS_PROXY, and that /etc/hosts
// resolves without DNS).
type TLSServer struct {
	URL       string // https://127.0.0.1:PORT, no trailing slash
	Addr      string // 127.0.0.1:PORT
	Port      string
	CAFile    string         // the CA certificate (PEM) in t.TempDir(), for SSL_CERT_FILE
	CAPEM     []byte         // the same PEM
	CertPool  *x509.CertPool // a pool holding only this server's CA
	server    *httptest.Server
	closeOnce sync.Once
}

// StartTLS starts an HTTPS server on 127.0.0.1 serving handler (HTTP/1.1, so handlers may
// hijack the connection). It is closed when the test ends.
func StartTLS(t testing.TB, handler http.Handler) *TLSServer {
	t.Helper()
	ca, leaf, err := newCertificates()
	if err != nil {
		t.Fatalf("testenv: generate TLS certificates: %v", err)
	}
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, ca.pem, 0o644); err != nil {
		t.Fatalf("testenv: write CA file: %v", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)

	srv := httptest.NewUnstartedServer(handler)
	srv.TLS = &tls.Config{
		Certificates: []tls.Certificate{leaf},
		MinVersion:   tls.VersionTLS12,
	}
	// Silence "TLS handshake error" lines from tests that use an untrusting client on purpose.
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	addr := srv.Listener.Addr().String()
	_, port, _ := net.SplitHostPort(addr)
	s := &TLSServer{
		URL:      "https://" + addr,
		Addr:     addr,
		Port:     port,
		CAFile:   caFile,
		CAPEM:    ca.pem,
		CertPool: pool,
		server:   srv,
	}
	t.Cleanup(s.Close)
	return s
}

// Close stops the server; it is also done at the end of the test.
func (s *TLSServer) Close() {
	s.closeOnce.Do(func() {
		s.server.CloseClientConnections()
		s.server.Close()
	})
}

// URLFor returns https://host:PORT joined with path (which should start with "/").
func (s *TLSServer) URLFor(host, path string) string {
	return "https://" + net.JoinHostPort(host, s.Port) + path
}

// Client returns an HTTP client that trusts only this server's CA and uses no proxy.
func (s *TLSServer) Client() *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: s.CertPool, MinVersion: tls.VersionTLS12},
		},
		Timeout: 30 * time.Second,
	}
}

type certificate struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newCertificates() (certificate, tls.Certificate, error) {
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return certificate{}, tls.Certificate{}, err
	}
	caTemplate := &x509.Certificate{
		SerialNumber:          randomSerial(),
		Subject:               pkix.Name{CommonName: "pcs-lifecycle test CA " + strconv.FormatInt(now.UnixNano(), 36)},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, &caKey.PublicKey, caKey)
	if err != nil {
		return certificate{}, tls.Certificate{}, err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return certificate{}, tls.Certificate{}, err
	}
	ca := certificate{
		cert: caCert,
		key:  caKey,
		pem:  pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
	}

	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return certificate{}, tls.Certificate{}, err
	}
	leafTemplate := &x509.Certificate{
		SerialNumber: randomSerial(),
		Subject:      pkix.Name{CommonName: "localhost"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost", "*.localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTemplate, caCert, &leafKey.PublicKey, caKey)
	if err != nil {
		return certificate{}, tls.Certificate{}, err
	}
	leafCert, err := x509.ParseCertificate(leafDER)
	if err != nil {
		return certificate{}, tls.Certificate{}, err
	}
	leaf := tls.Certificate{
		Certificate: [][]byte{leafDER},
		PrivateKey:  leafKey,
		Leaf:        leafCert,
	}
	return ca, leaf, nil
}

func randomSerial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err)
	}
	return n
}

// Files is an http.Handler serving fixed contents by URL path (GET and HEAD), 404 for any
// other path, and counting every request so tests can assert how many were made.
type Files struct {
	mu     sync.Mutex
	files  map[string][]byte
	counts map[string]int
	total  int
}

// NewFiles returns a handler serving files (URL path → contents). The map is copied.
func NewFiles(files map[string][]byte) *Files {
	f := &Files{files: map[string][]byte{}, counts: map[string]int{}}
	for p, d := range files {
		f.files[p] = d
	}
	return f
}

// Set adds or replaces the contents served at path.
func (f *Files) Set(path string, data []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.files[path] = data
}

// Requests returns how many requests were made for path.
func (f *Files) Requests(path string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.counts[path]
}

// TotalRequests returns how many requests were made for any path.
func (f *Files) TotalRequests() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.total
}

func (f *Files) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.counts[r.URL.Path]++
	f.total++
	data, ok := f.files[r.URL.Path]
	f.mu.Unlock()
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		_, _ = w.Write(data)
	}
}

// ConnectProxy is a minimal HTTP CONNECT proxy on 127.0.0.1 for HTTPS_PROXY tests. Whatever
// host a client asks for, it tunnels to the one upstream address it was started with (so no
// name is ever resolved and nothing beyond loopback is contacted), and it records each CONNECT
// target.
type ConnectProxy struct {
	URL      string // http://127.0.0.1:PORT, for HTTPS_PROXY
	upstream string
	srv      *connServer
	mu       sync.Mutex
	targets  []string
}

// StartConnectProxy starts a CONNECT proxy tunnelling to upstream (host:port on loopback). It
// is closed when the test ends.
func StartConnectProxy(t testing.TB, upstream string) *ConnectProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testenv: listen for CONNECT proxy: %v", err)
	}
	p := &ConnectProxy{URL: "http://" + ln.Addr().String(), upstream: upstream}
	p.srv = newConnServer(ln, p.handle)
	p.srv.start()
	t.Cleanup(p.Close)
	return p
}

// Connects returns how many CONNECT requests the proxy received.
func (p *ConnectProxy) Connects() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.targets)
}

// Targets returns the host:port of every CONNECT request, in order.
func (p *ConnectProxy) Targets() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.targets...)
}

// Close stops the proxy and its tunnels.
func (p *ConnectProxy) Close() { p.srv.Close() }

func (p *ConnectProxy) handle(c net.Conn) {
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	if req.Method != http.MethodConnect {
		_, _ = io.WriteString(c, "HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
		return
	}
	p.mu.Lock()
	p.targets = append(p.targets, req.Host)
	p.mu.Unlock()

	up, err := net.DialTimeout("tcp", p.upstream, 10*time.Second)
	if err != nil {
		_, _ = io.WriteString(c, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
		return
	}
	if !p.srv.track(up) {
		return
	}
	defer p.srv.untrack(up)
	_ = c.SetReadDeadline(time.Time{})
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection Established\r\n\r\n"); err != nil {
		return
	}
	done := make(chan struct{}, 2)
	go func() {
		// Bytes the client sent after the CONNECT request are buffered in br.
		_, _ = io.Copy(up, br)
		if tc, ok := up.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}()
	go func() {
		_, _ = io.Copy(c, up)
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}()
	<-done
	<-done
}
