package source

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/testenv"
	"github.com/pcs-lifecycle/pcs-lifecycle/pkg/lifecycle"
)

func TestWait(t *testing.T) {
	for _, tc := range []struct {
		backoff time.Duration
		n       int
		jitter  float64
		want    time.Duration
	}{
		{5 * time.Second, 1, 0, 5 * time.Second},
		{5 * time.Second, 2, 0, 10 * time.Second},
		{5 * time.Second, 3, 0, 20 * time.Second},
		{5 * time.Second, 1, 1, 5750 * time.Millisecond},
		{5 * time.Second, 2, 0.5, 10750 * time.Millisecond},
		{50 * time.Millisecond, 1, 0, 50 * time.Millisecond},
		{time.Second, 0, 0, time.Second},
	} {
		assert.Equal(t, tc.want, Wait(tc.backoff, tc.n, tc.jitter), "%v n=%d jitter=%v", tc.backoff, tc.n, tc.jitter)
	}
	// The production default: 3 attempts wait twice, at most 5s*1.15 + 10s*1.15 = 17.25s.
	worst := Wait(DefaultBackoff, 1, 1) + Wait(DefaultBackoff, 2, 1)
	assert.Equal(t, 17250*time.Millisecond, worst)
	assert.Positive(t, Wait(time.Hour, 1000, 1), "no overflow")
}

func TestDefaults(t *testing.T) {
	f := New(Config{})
	assert.Equal(t, 3, f.attempts)
	assert.Equal(t, 5*time.Second, f.backoff)
	assert.Equal(t, int64(2097152), f.maxSize)
	assert.Equal(t, 60*time.Second, f.attemptTimeout)
	assert.NotNil(t, f.http.CheckRedirect)
}

// notFoundServer is a TLS server answering 404 to everything, and a quick Config trusting it.
func notFoundServer(t *testing.T, attempts int, backoff time.Duration) (string, *testenv.Files, Config) {
	t.Helper()
	files := testenv.NewFiles(nil)
	srv := testenv.StartTLS(t, files)
	cfg := Config{Attempts: attempts, Backoff: backoff, HTTPClient: trusting(srv.CertPool)}
	return srv.URL + "/missing.sh", files, cfg
}

// With a 50 ms first wait, 3 attempts wait 50-57.5 ms then 100-115 ms (the waits the
// fetcher computes), at least 150 ms in all (timers never fire early).
func TestBackoffTiming(t *testing.T) {
	url, files, cfg := notFoundServer(t, 3, 50*time.Millisecond)
	var mu sync.Mutex
	var waits []time.Duration
	cfg.OnRetry = func(_ string, _ int, _ error, wait time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		waits = append(waits, wait)
	}

	start := time.Now()
	_, err := New(cfg).Fetch(testContext(t), src(url))
	elapsed := time.Since(start)
	require.Error(t, err)
	assert.Equal(t, 3, files.TotalRequests())
	require.Len(t, waits, 2)
	assert.GreaterOrEqual(t, waits[0], 50*time.Millisecond)
	assert.Less(t, waits[0], 57500*time.Microsecond)
	assert.GreaterOrEqual(t, waits[1], 100*time.Millisecond)
	assert.Less(t, waits[1], 115*time.Millisecond)
	assert.GreaterOrEqual(t, elapsed, 150*time.Millisecond)
}

func TestCancelDuringBackoff(t *testing.T) {
	url, files, cfg := notFoundServer(t, 3, 10*time.Second)
	ctx, cancel := context.WithCancel(testContext(t))
	cfg.OnRetry = func(string, int, error, time.Duration) {
		time.AfterFunc(50*time.Millisecond, cancel)
	}

	// A backoff of 10 s not cut by the context would end in a third 404, not a cancellation.
	res, err := New(cfg).Fetch(ctx, src(url))
	require.Error(t, err)
	assert.Nil(t, res.Data)
	assert.ErrorIs(t, err, context.Canceled)
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, Canceled, e.Kind)
	assert.Equal(t, 1, e.Attempts)
	assert.Contains(t, err.Error(), "canceled after 1 attempt")
	assert.Contains(t, err.Error(), "HTTP 404")
	assert.Equal(t, 1, files.TotalRequests())
}

func TestCanceledBeforeStart(t *testing.T) {
	url, files, cfg := notFoundServer(t, 3, time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := New(cfg).Fetch(ctx, src(url))
	assert.Equal(t, Canceled, KindOf(err))
	assert.ErrorIs(t, err, context.Canceled)
	assert.Zero(t, files.TotalRequests())
}

func TestAttemptTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := testenv.StartTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release) })
	cfg := quick(2)
	cfg.HTTPClient = trusting(srv.CertPool)
	cfg.AttemptTimeout = 100 * time.Millisecond

	// The server never answers: only the attempt timeout ends each attempt.
	res, err := New(cfg).Fetch(testContext(t), src(srv.URL+"/hang.sh"))
	require.Error(t, err, "%+v", res)
	assert.Equal(t, Network, KindOf(err), err.Error())
	assert.Contains(t, err.Error(), "network timeout after 2 attempts")
}

func TestInvalidLocations(t *testing.T) {
	for _, tc := range []struct {
		src  lifecycle.ScriptSource
		text string
	}{
		{src(""), "not a URL"},
		{src("/etc/passwd"), "not a URL"},
		{src("ftp://example.com/x.sh"), `unsupported scheme "ftp"`},
		{src("http://example.com/x.sh"), "http:// is not allowed"},
		{src("https:///x.sh"), "no host"},
		{src("s3://"), "no bucket"},
		{src("s3:///key"), "no bucket"},
		{src("s3://bucket"), "no key"},
		{src("s3://bucket/"), "no key"},
		{lifecycle.ScriptSource{ScriptLocation: "https://example.com/x", S3VersionID: "v1"}, "s3VersionId is only valid with an s3:// location"},
		{lifecycle.ScriptSource{ScriptLocation: "s3://b/k", Checksum: "abc"}, "not 64 hexadecimal characters"},
		{lifecycle.ScriptSource{ScriptLocation: "s3://b/k", Checksum: strings.Repeat("g", 64)}, "not 64 hexadecimal characters"},
	} {
		t.Run(tc.src.ScriptLocation, func(t *testing.T) {
			retried := false
			f := New(Config{Attempts: 3, Backoff: time.Hour, OnRetry: func(string, int, error, time.Duration) { retried = true }})
			for _, fetch := range []func(context.Context, lifecycle.ScriptSource) (Result, error){f.Fetch, f.FetchOnce} {
				res, err := fetch(testContext(t), tc.src)
				require.Error(t, err)
				assert.Nil(t, res.Data)
				var e *Error
				require.ErrorAs(t, err, &e)
				assert.Equal(t, Invalid, e.Kind)
				assert.Zero(t, e.Attempts)
				assert.Equal(t, tc.src.ScriptLocation, e.Location)
				assert.Contains(t, err.Error(), "download "+tc.src.ScriptLocation+": invalid location: ")
				assert.Contains(t, err.Error(), tc.text)
			}
			assert.False(t, retried, "an invalid location is not retried")
		})
	}
}

func TestFetchOnce(t *testing.T) {
	url, files, cfg := notFoundServer(t, 3, time.Hour)
	_, err := New(cfg).FetchOnce(testContext(t), src(url))
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, NotFound, e.Kind)
	assert.Equal(t, 1, files.TotalRequests(), "one attempt, no retry")
	assert.Contains(t, err.Error(), "not found (404): GET", "FetchOnce does not count attempts")
}

func TestErrorText(t *testing.T) {
	cause := errors.New("boom")
	for _, tc := range []struct {
		err  *Error
		want string
	}{
		{&Error{Location: "s3://b/k", Kind: NotFound, Attempts: 3, StatusCode: 404, Err: cause}, "download s3://b/k: not found (404) after 3 attempts: boom"},
		{&Error{Location: "s3://b/k", Kind: Forbidden, Attempts: 1, Err: cause}, "download s3://b/k: access denied (403) after 1 attempt: boom"},
		{&Error{Location: "https://h/x", Kind: Server, Attempts: 2, StatusCode: 502, Err: cause}, "download https://h/x: server error (502) after 2 attempts: boom"},
		{&Error{Location: "https://h/x", Kind: TooLarge, Attempts: 1, Err: cause}, "download https://h/x: too large after 1 attempt: boom"},
		{&Error{Location: "https://h/x", Kind: Network, Attempts: 3, Err: cause}, "download https://h/x: network error after 3 attempts: boom"},
		{&Error{Location: "ftp://h/x", Kind: Invalid, Err: cause}, "download ftp://h/x: invalid location: boom"},
		{&Error{Location: "https://h/x", Kind: Other, Attempts: 1, StatusCode: 302, Err: cause}, "download https://h/x: failed (HTTP 302) after 1 attempt: boom"},
	} {
		assert.Equal(t, tc.want, tc.err.Error())
		assert.ErrorIs(t, tc.err, cause)
	}
	assert.Equal(t, "checksum-mismatch", ChecksumMismatch.String())
	assert.Equal(t, Other, KindOf(errors.New("x")))
}

// countingReader counts the bytes read from it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func TestCopyCappedNeverReadsMoreThanMaxPlusOne(t *testing.T) {
	for _, size := range []int{0, 999, 1000, 1001, 5000} {
		content := bytes.Repeat([]byte{'x'}, size)
		r := &countingReader{r: bytes.NewReader(content)}
		var w bytes.Buffer
		n, sum, err := copyCapped(&w, r, 1000)
		assert.LessOrEqual(t, r.n, int64(1001))
		assert.LessOrEqual(t, int64(w.Len()), int64(1001))
		if size > 1000 {
			var tl *tooLargeError
			assert.ErrorAs(t, err, &tl)
			assert.Empty(t, sum)
		} else {
			require.NoError(t, err)
			assert.Equal(t, int64(size), n)
			assert.Equal(t, string(content), w.String())
			want := sha256.Sum256(content)
			assert.Equal(t, hex.EncodeToString(want[:]), sum)
		}
	}
}

// failingWriter fails every write, as a full disk would.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, syscall.ENOSPC }

func TestCopyCappedTellsTheDestinationsFailure(t *testing.T) {
	_, _, err := copyCapped(failingWriter{}, bytes.NewReader([]byte("#!/bin/sh\n")), 1000)
	var se *sinkError
	require.ErrorAs(t, err, &se)
	assert.ErrorIs(t, err, syscall.ENOSPC)
}
