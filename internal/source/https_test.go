package source

import (
	"bytes"
	"crypto/x509"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/testenv"
	"github.com/pcs-lifecycle/pcs-lifecycle/pkg/lifecycle"
)

// trusting returns the production client (NewHTTPClient) trusting only pool. Building the
// pool into the client, rather than setting SSL_CERT_FILE, is what works inside one test
// process: crypto/x509 loads the system pool once per process. SSL_CERT_FILE itself is tested
// in a subprocess (TestHTTPSSSLCertFile).
func trusting(pool *x509.CertPool) *http.Client {
	c := NewHTTPClient()
	tr := c.Transport.(*http.Transport)
	tr.TLSClientConfig.RootCAs = pool
	tr.Proxy = nil // tests reach 127.0.0.1 directly whatever the environment says
	return c
}

func src(url string) lifecycle.ScriptSource {
	return lifecycle.ScriptSource{ScriptLocation: url}
}

// httpsFiles starts a TLS server serving files and a quick Config trusting it.
func httpsFiles(t *testing.T, attempts int, files map[string][]byte) (*testenv.TLSServer, *testenv.Files, Config) {
	t.Helper()
	h := testenv.NewFiles(files)
	srv := testenv.StartTLS(t, h)
	cfg := quick(attempts)
	cfg.HTTPClient = trusting(srv.CertPool)
	return srv, h, cfg
}

func TestHTTPSFetchOK(t *testing.T) {
	data := []byte("#!/bin/bash\necho https\n")
	srv, files, cfg := httpsFiles(t, 3, map[string][]byte{"/scripts/a.sh": data})

	res, err := New(cfg).Fetch(testContext(t), src(srv.URL+"/scripts/a.sh"))
	require.NoError(t, err)
	assert.Equal(t, data, res.Data)
	assert.Equal(t, sha(data), res.SHA256)
	assert.Equal(t, 1, res.Attempts)
	assert.Equal(t, 1, files.Requests("/scripts/a.sh"))

	t.Run("checksum either case", func(t *testing.T) {
		for _, sum := range []string{sha(data), strings.ToUpper(sha(data))} {
			s := src(srv.URL + "/scripts/a.sh")
			s.Checksum = sum
			_, err := New(cfg).Fetch(testContext(t), s)
			require.NoError(t, err)
		}
	})
	t.Run("checksum mismatch", func(t *testing.T) {
		s := src(srv.URL + "/scripts/a.sh")
		s.Checksum = strings.Repeat("0", 64)
		before := files.Requests("/scripts/a.sh")
		res, err := New(cfg).Fetch(testContext(t), s)
		require.Error(t, err)
		assert.Nil(t, res.Data)
		assert.Equal(t, ChecksumMismatch, KindOf(err))
		assert.Contains(t, err.Error(), "expected sha256 "+strings.Repeat("0", 64)+", got "+sha(data))
		assert.Equal(t, 3, files.Requests("/scripts/a.sh")-before, "a mismatch is retried")
	})
	t.Run("document", func(t *testing.T) {
		got, err := New(cfg).FetchDocument(testContext(t), srv.URL+"/scripts/a.sh")
		require.NoError(t, err)
		assert.Equal(t, data, got)
	})
	t.Run("localhost name", func(t *testing.T) {
		_, err := New(cfg).Fetch(testContext(t), src(srv.URLFor("localhost", "/scripts/a.sh")))
		require.NoError(t, err)
	})
}

func TestHTTPSStatus(t *testing.T) {
	srv := testenv.StartTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		code, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/"))
		w.WriteHeader(code)
		fmt.Fprintln(w, "body of an error page")
	}))
	cfg := quick(3)
	cfg.HTTPClient = trusting(srv.CertPool)

	for _, tc := range []struct {
		code int
		kind Kind
		text string
	}{
		{404, NotFound, "not found (404) after 3 attempts: GET " + srv.URL + "/404: HTTP 404 Not Found"},
		{403, Forbidden, "access denied (403) after 3 attempts"},
		{401, Forbidden, "access denied (401) after 3 attempts"},
		{500, Server, "server error (500) after 3 attempts"},
		{503, Server, "server error (503) after 3 attempts"},
		{204, Other, "failed (HTTP 204) after 3 attempts"},
		{410, Other, "failed (HTTP 410) after 3 attempts"},
	} {
		t.Run(strconv.Itoa(tc.code), func(t *testing.T) {
			loc := srv.URL + "/" + strconv.Itoa(tc.code)
			res, err := New(cfg).Fetch(testContext(t), src(loc))
			require.Error(t, err)
			assert.Nil(t, res.Data)
			var e *Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, tc.kind, e.Kind)
			assert.Equal(t, tc.code, e.StatusCode)
			assert.Equal(t, 3, e.Attempts)
			assert.Equal(t, loc, e.Location)
			assert.Contains(t, err.Error(), "download "+loc+": "+tc.text)
		})
	}
}

func TestHTTPSRetryThenSuccess(t *testing.T) {
	var requests atomic.Int32
	data := []byte("echo third time lucky\n")
	srv := testenv.StartTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if requests.Add(1) < 3 {
			http.Error(w, "busy", http.StatusInternalServerError)
			return
		}
		_, _ = w.Write(data)
	}))
	var waits int
	cfg := quick(3)
	cfg.HTTPClient = trusting(srv.CertPool)
	cfg.OnRetry = func(_ string, attempt int, err error, _ time.Duration) {
		waits++
		assert.Equal(t, Server, KindOf(err))
		assert.Equal(t, waits, attempt)
	}

	res, err := New(cfg).Fetch(testContext(t), src(srv.URL+"/s.sh"))
	require.NoError(t, err)
	assert.Equal(t, data, res.Data)
	assert.Equal(t, 3, res.Attempts)
	assert.Equal(t, int32(3), requests.Load())
	assert.Equal(t, 2, waits)
}

func TestHTTPSUntrusted(t *testing.T) {
	srv, files, _ := httpsFiles(t, 1, map[string][]byte{"/a.sh": []byte("echo\n")})
	other := testenv.StartTLS(t, http.NotFoundHandler())

	check := func(t *testing.T, err error) {
		t.Helper()
		require.Error(t, err)
		assert.Equal(t, Untrusted, KindOf(err), err.Error())
		assert.Contains(t, err.Error(), "not trusted")
		assert.Contains(t, err.Error(), "SSL_CERT_FILE")
	}

	t.Run("system trust store", func(t *testing.T) {
		// The default client: this process's system pool does not hold the test CA.
		_, err := New(quick(2)).Fetch(testContext(t), src(srv.URL+"/a.sh"))
		check(t, err)
		assert.Contains(t, err.Error(), "after 2 attempts")
	})
	t.Run("another CA", func(t *testing.T) {
		cfg := quick(1)
		cfg.HTTPClient = trusting(other.CertPool)
		_, err := New(cfg).Fetch(testContext(t), src(srv.URL+"/a.sh"))
		check(t, err)
	})
	assert.Zero(t, files.TotalRequests(), "no request got past the handshake")
}

// SSL_CERT_FILE is read by crypto/x509 once per process, so it is tested in a fresh process
// running the production client (see runHelper).
func TestHTTPSSSLCertFile(t *testing.T) {
	t.Parallel()
	data := []byte("echo trusted by SSL_CERT_FILE\n")
	srv, files, _ := httpsFiles(t, 1, map[string][]byte{"/a.sh": data})
	other := testenv.StartTLS(t, http.NotFoundHandler())

	res := fetchInSubprocess(t, srv.URL+"/a.sh", "SSL_CERT_FILE="+srv.CAFile)
	require.True(t, res.OK, res.Error)
	assert.Equal(t, string(data), res.Data)
	assert.Equal(t, 1, files.Requests("/a.sh"))

	res = fetchInSubprocess(t, srv.URL+"/a.sh", "SSL_CERT_FILE="+other.CAFile)
	require.False(t, res.OK)
	assert.Equal(t, Untrusted.String(), res.Kind, res.Error)
	assert.Contains(t, res.Error, "SSL_CERT_FILE")
	assert.Equal(t, 1, files.Requests("/a.sh"))
}

// net/http's ProxyFromEnvironment never proxies requests to "localhost" or loopback IPs, and
// reads HTTPS_PROXY/NO_PROXY once per process. So the test runs the production client in a
// fresh process and asks for https://localhost.:PORT/ — the fully qualified form of localhost,
// which the proxy rules do not exempt, which /etc/hosts resolves without DNS, and which the
// certificate matches. The CONNECT proxy tunnels every request to the TLS server on 127.0.0.1,
// so even a name it were asked for could not lead anywhere else.
func TestHTTPSProxyFromEnvironment(t *testing.T) {
	t.Parallel()
	data := []byte("echo via proxy\n")
	srv, files, _ := httpsFiles(t, 1, map[string][]byte{"/p.sh": data})
	url := srv.URLFor("localhost.", "/p.sh")

	t.Run("HTTPS_PROXY", func(t *testing.T) {
		proxy := testenv.StartConnectProxy(t, srv.Addr)
		res := fetchInSubprocess(t, url, "SSL_CERT_FILE="+srv.CAFile, "HTTPS_PROXY="+proxy.URL)
		require.True(t, res.OK, res.Error)
		assert.Equal(t, string(data), res.Data)
		assert.Equal(t, []string{"localhost.:" + srv.Port}, proxy.Targets())
	})
	t.Run("lowercase https_proxy", func(t *testing.T) {
		proxy := testenv.StartConnectProxy(t, srv.Addr)
		res := fetchInSubprocess(t, url, "SSL_CERT_FILE="+srv.CAFile, "https_proxy="+proxy.URL)
		require.True(t, res.OK, res.Error)
		assert.Equal(t, 1, proxy.Connects())
	})
	// NO_PROXY is read by the same net/http code. A test of a host it exempts would have to
	// reach a name that is neither "localhost" nor a loopback IP (both always exempt) directly,
	// and such a name cannot be resolved without DNS on every machine; so only entries that do
	// not match are tested here: the request still goes through the proxy.
	t.Run("NO_PROXY not matching", func(t *testing.T) {
		proxy := testenv.StartConnectProxy(t, srv.Addr)
		res := fetchInSubprocess(t, url, "SSL_CERT_FILE="+srv.CAFile, "HTTPS_PROXY="+proxy.URL,
			"NO_PROXY=example.com,.internal,10.0.0.0/8")
		require.True(t, res.OK, res.Error)
		assert.Equal(t, 1, proxy.Connects())
	})
	assert.Equal(t, 3, files.Requests("/p.sh"))
}

// truncating answers with a Content-Length larger than the bytes it writes, then closes.
func truncating(t *testing.T, declared, written int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			return
		}
		defer conn.Close()
		fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n", declared)
		_, _ = buf.Write(bytes.Repeat([]byte("x"), written))
		_ = buf.Flush()
	}
}

func TestHTTPSTruncatedBody(t *testing.T) {
	var requests atomic.Int32
	h := truncating(t, 1000, 600)
	srv := testenv.StartTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		h(w, r)
	}))
	cfg := quick(2)
	cfg.HTTPClient = trusting(srv.CertPool)

	res, err := New(cfg).Fetch(testContext(t), src(srv.URL+"/t.sh"))
	require.Error(t, err)
	assert.Nil(t, res.Data, "a short body is never returned as data")
	assert.Equal(t, Network, KindOf(err), err.Error())
	assert.Contains(t, err.Error(), "unexpected EOF")
	assert.Equal(t, int32(2), requests.Load())
}

func TestHTTPSSizeCap(t *testing.T) {
	exact := bytes.Repeat([]byte("e"), DefaultMaxSize)
	var wrote atomic.Int64
	srv := testenv.StartTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/exact.sh":
			_, _ = w.Write(exact)
		case "/declared.sh":
			// Declares 2 MiB + 1 bytes; the client must give up on seeing the header.
			w.Header().Set("Content-Length", strconv.Itoa(DefaultMaxSize+1))
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write(bytes.Repeat([]byte("d"), DefaultMaxSize+1))
		case "/streamed.sh":
			// No Content-Length: chunked, 8 MiB if the client read it all.
			w.WriteHeader(http.StatusOK)
			chunk := bytes.Repeat([]byte("s"), 64<<10)
			for i := 0; i < 128; i++ {
				n, err := w.Write(chunk)
				wrote.Add(int64(n))
				if err != nil {
					return
				}
				http.NewResponseController(w).Flush()
			}
		}
	}))
	cfg := quick(1)
	cfg.HTTPClient = trusting(srv.CertPool)
	f := New(cfg)

	res, err := f.Fetch(testContext(t), src(srv.URL+"/exact.sh"))
	require.NoError(t, err, "exactly 2 MiB is accepted")
	assert.Len(t, res.Data, DefaultMaxSize)

	res, err = f.Fetch(testContext(t), src(srv.URL+"/declared.sh"))
	require.Error(t, err)
	assert.Nil(t, res.Data)
	assert.Equal(t, TooLarge, KindOf(err))
	assert.Contains(t, err.Error(), "too large after 1 attempt: Content-Length 2097153 is over the 2097152-byte limit")

	res, err = f.Fetch(testContext(t), src(srv.URL+"/streamed.sh"))
	require.Error(t, err)
	assert.Nil(t, res.Data)
	assert.Equal(t, TooLarge, KindOf(err))
	assert.Contains(t, err.Error(), "more than 2097152 bytes")

	t.Run("a smaller MaxSize", func(t *testing.T) {
		cfg := cfg
		cfg.MaxSize = 1000
		_, err := New(cfg).Fetch(testContext(t), src(srv.URL+"/exact.sh"))
		assert.Equal(t, TooLarge, KindOf(err))
	})
}

func TestHTTPSRedirects(t *testing.T) {
	var plainRequests atomic.Int32
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		plainRequests.Add(1)
		_, _ = w.Write([]byte("echo insecure\n"))
	}))
	t.Cleanup(plain.Close)

	data := []byte("echo redirected\n")
	srv := testenv.StartTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/to-http":
			http.Redirect(w, r, plain.URL+"/x.sh", http.StatusFound)
		case "/to-https":
			http.Redirect(w, r, "/final.sh", http.StatusMovedPermanently)
		case "/final.sh":
			_, _ = w.Write(data)
		default:
			http.NotFound(w, r)
		}
	}))

	callers := srv.Client()
	for name, client := range map[string]*http.Client{
		"production client":              trusting(srv.CertPool),
		"caller's client without policy": callers,
	} {
		t.Run(name, func(t *testing.T) {
			cfg := quick(2)
			cfg.HTTPClient = client
			f := New(cfg)

			res, err := f.Fetch(testContext(t), src(srv.URL+"/to-https"))
			require.NoError(t, err)
			assert.Equal(t, data, res.Data)

			res, err = f.Fetch(testContext(t), src(srv.URL+"/to-http"))
			require.Error(t, err)
			assert.Nil(t, res.Data)
			assert.Equal(t, Other, KindOf(err))
			assert.Contains(t, err.Error(), "refusing redirect to "+plain.URL+"/x.sh: only https:// is allowed")
			assert.Zero(t, plainRequests.Load(), "the http:// URL is never fetched")
		})
	}
	assert.Nil(t, callers.CheckRedirect, "the caller's client is not modified")
}

func TestHTTPRefused(t *testing.T) {
	var requests atomic.Int32
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
	}))
	t.Cleanup(plain.Close)
	res, err := New(quick(3)).Fetch(testContext(t), src(plain.URL+"/x.sh"))
	require.Error(t, err)
	assert.Nil(t, res.Data)
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, Invalid, e.Kind)
	assert.Zero(t, e.Attempts)
	assert.Contains(t, err.Error(), "http:// is not allowed")
	assert.Zero(t, requests.Load())
}
