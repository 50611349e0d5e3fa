package source

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/pcs-lifecycle/pcs-lifecycle/pkg/lifecycle"
)

// Defaults of Config's zero values.
const (
	DefaultAttempts       = 3
	DefaultBackoff        = 5 * time.Second
	DefaultMaxSize        = 2 << 20 // 2 MiB, the service's script size limit
	DocumentMaxSize       = 1 << 20 // 1 MiB, the cap of FetchDocument
	DefaultAttemptTimeout = 60 * time.Second
	// MaxJitter is the largest fraction added to a backoff wait: wait n is
	// Backoff * 2^(n-1) * (1 + [0, MaxJitter)).
	MaxJitter = 0.15
)

// S3API is the part of the S3 client the fetcher uses; *s3.Client implements it.
type S3API interface {
	GetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
}

// Config tunes a Fetcher. The zero value is the production behaviour.
type Config struct {
	// Attempts is the number of tries per download; 0 means DefaultAttempts (3).
	Attempts int
	// Backoff is the first wait between tries; 0 means DefaultBackoff (5s). Wait n is
	// Backoff * 2^(n-1) * (1 + jitter), jitter in [0, 0.15): about 17 s at most for 3 tries.
	Backoff time.Duration
	// MaxSize is the largest script accepted, in bytes; 0 means DefaultMaxSize (2 MiB). At
	// most MaxSize+1 bytes are ever read.
	MaxSize int64
	// AttemptTimeout bounds one attempt (connect, headers and body); 0 means
	// DefaultAttemptTimeout (60s).
	AttemptTimeout time.Duration
	// HTTPClient fetches https:// locations; nil means NewHTTPClient(). Whatever the client,
	// a redirect to anything but https:// is refused.
	HTTPClient *http.Client
	// S3 fetches s3:// locations; nil means a client built on first use from the standard AWS
	// configuration chain (see NewS3Client).
	S3 S3API
	// ExpectedBucketOwner, when set, is sent as GetObject's ExpectedBucketOwner.
	ExpectedBucketOwner string
	// OnRetry, when set, is called before each wait between attempts, e.g. to log it.
	OnRetry func(location string, attempt int, err error, wait time.Duration)
}

// Result is a successful download.
type Result struct {
	Data      []byte // the content (Fetch and FetchDocument only; FetchTo streams it instead)
	Size      int64  // its length in bytes
	SHA256    string // lowercase hex SHA-256 of the content
	Attempts  int    // how many attempts it took (1 = first try)
	VersionID string // S3 version ID, when the bucket is versioned
	ETag      string // as the server sent it (quotes included)
}

// Fetcher downloads scripts. It is safe for concurrent use.
type Fetcher struct {
	attempts       int
	backoff        time.Duration
	maxSize        int64
	attemptTimeout time.Duration
	http           *http.Client
	owner          string
	onRetry        func(string, int, error, time.Duration)

	mu sync.Mutex
	s3 S3API // nil until first s3:// use when not configured
}

// New returns a Fetcher with cfg's zero values defaulted.
func New(cfg Config) *Fetcher {
	f := &Fetcher{
		attempts:       cfg.Attempts,
		backoff:        cfg.Backoff,
		maxSize:        cfg.MaxSize,
		attemptTimeout: cfg.AttemptTimeout,
		owner:          cfg.ExpectedBucketOwner,
		onRetry:        cfg.OnRetry,
		s3:             cfg.S3,
	}
	if f.attempts <= 0 {
		f.attempts = DefaultAttempts
	}
	if f.backoff <= 0 {
		f.backoff = DefaultBackoff
	}
	if f.maxSize <= 0 {
		f.maxSize = DefaultMaxSize
	}
	if f.attemptTimeout <= 0 {
		f.attemptTimeout = DefaultAttemptTimeout
	}
	if cfg.HTTPClient == nil {
		f.http = NewHTTPClient()
	} else {
		c := *cfg.HTTPClient // a shallow copy: the caller's client keeps its own policy
		c.CheckRedirect = httpsOnlyRedirects(cfg.HTTPClient.CheckRedirect)
		f.http = &c
	}
	return f
}

// Sink receives a download as it streams in. Reset empties it: each attempt starts with a
// Reset, so a failed attempt's bytes never mix with the next one's.
type Sink interface {
	io.Writer
	Reset() error
}

// Fetch downloads src, trying up to Attempts times with backoff, and verifies its size and,
// when src.Checksum is set, its SHA-256 (either case). Every kind of failure is retried except
// Invalid (nothing to try) and Canceled; the context is honoured at once, also while waiting.
// The content is returned in Result.Data; FetchTo streams it instead.
func (f *Fetcher) Fetch(ctx context.Context, src lifecycle.ScriptSource) (Result, error) {
	var buf memSink
	res, err := f.FetchTo(ctx, src, &buf)
	if err != nil {
		return Result{}, err
	}
	res.Data = buf.Bytes()
	return res, nil
}

// FetchOnce is one attempt of Fetch, without retry.
func (f *Fetcher) FetchOnce(ctx context.Context, src lifecycle.ScriptSource) (Result, error) {
	var buf memSink
	res, err := f.FetchOnceTo(ctx, src, &buf)
	if err != nil {
		return Result{}, err
	}
	res.Data = buf.Bytes()
	return res, nil
}

// FetchTo is Fetch streaming the content into w, through the SHA-256 hash and the size cap:
// at most MaxSize+1 bytes are ever read, and no more than one read buffer is held in memory.
// On success w holds exactly the verified content (size and checksum checked); on failure
// its content is undefined and must be discarded.
func (f *Fetcher) FetchTo(ctx context.Context, src lifecycle.ScriptSource, w Sink) (Result, error) {
	return f.retry(ctx, src.ScriptLocation, func(ctx context.Context) (Result, error) {
		return f.fetchOnce(ctx, src, f.maxSize, w)
	})
}

// FetchOnceTo is one attempt of FetchTo, without retry.
func (f *Fetcher) FetchOnceTo(ctx context.Context, src lifecycle.ScriptSource, w Sink) (Result, error) {
	res, err := f.fetchOnce(ctx, src, f.maxSize, w)
	if err != nil {
		return Result{}, err
	}
	res.Attempts = 1
	return res, nil
}

// FetchDocument downloads a configuration document from s3:// or https:// with the same
// retries, capped at DocumentMaxSize (1 MiB).
func (f *Fetcher) FetchDocument(ctx context.Context, location string) ([]byte, error) {
	var buf memSink
	_, err := f.retry(ctx, location, func(ctx context.Context) (Result, error) {
		return f.fetchOnce(ctx, lifecycle.ScriptSource{ScriptLocation: location}, DocumentMaxSize, &buf)
	})
	if err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// memSink is a Sink in memory.
type memSink struct{ bytes.Buffer }

func (m *memSink) Reset() error { m.Buffer.Reset(); return nil }

// Wait returns the wait after failed attempt n (1-based) for a first wait of backoff and a
// jitter fraction in [0, 1) scaled to MaxJitter.
func Wait(backoff time.Duration, n int, jitter float64) time.Duration {
	if n < 1 {
		n = 1
	}
	if n > 30 {
		n = 30
	}
	w := float64(backoff) * float64(int64(1)<<(n-1)) * (1 + MaxJitter*jitter)
	if w >= math.MaxInt64 {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(w)
}

func (f *Fetcher) retry(ctx context.Context, location string, once func(context.Context) (Result, error)) (Result, error) {
	for attempt := 1; ; attempt++ {
		res, err := once(ctx)
		if err == nil {
			res.Attempts = attempt
			return res, nil
		}
		var e *Error
		if !errors.As(err, &e) {
			e = newError(location, Other, 0, err)
		}
		if e.Kind == Invalid {
			return Result{}, e
		}
		e.Attempts = attempt
		if e.Kind == Canceled || attempt >= f.attempts {
			return Result{}, e
		}
		wait := Wait(f.backoff, attempt, rand.Float64())
		if f.onRetry != nil {
			f.onRetry(location, attempt, e, wait)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return Result{}, &Error{
				Location: location,
				Kind:     Canceled,
				Attempts: attempt,
				Err:      fmt.Errorf("%w while waiting to retry (last error: %w)", context.Cause(ctx), e.Err),
			}
		case <-t.C:
		}
	}
}

// fetchOnce is one attempt: parse, then stream at most max+1 bytes into w through the hash,
// then check size and checksum.
func (f *Fetcher) fetchOnce(ctx context.Context, src lifecycle.ScriptSource, max int64, w Sink) (Result, error) {
	loc := src.ScriptLocation
	target, err := parseLocation(loc)
	if err != nil {
		return Result{}, newError(loc, Invalid, 0, err)
	}
	want := strings.ToLower(src.Checksum)
	if want != "" && !isSHA256Hex(want) {
		return Result{}, newError(loc, Invalid, 0, fmt.Errorf("checksum %q is not 64 hexadecimal characters (SHA-256)", src.Checksum))
	}
	if src.S3VersionID != "" && target.s3 == nil {
		return Result{}, newError(loc, Invalid, 0, errors.New("s3VersionId is only valid with an s3:// location"))
	}
	if err := ctx.Err(); err != nil {
		return Result{}, newError(loc, Canceled, 0, context.Cause(ctx))
	}

	actx, cancel := context.WithTimeout(ctx, f.attemptTimeout)
	defer cancel()
	var (
		res  Result
		body io.ReadCloser
	)
	if target.s3 != nil {
		body, res, err = f.getS3(actx, ctx, loc, target.s3, src.S3VersionID, max, want != "")
	} else {
		body, res, err = f.getHTTPS(actx, ctx, loc, target.https, max)
	}
	if err != nil {
		return Result{}, err
	}
	defer body.Close()
	if err := w.Reset(); err != nil {
		return Result{}, newError(loc, Other, 0, err)
	}
	n, sum, err := copyCapped(w, body, max)
	if err != nil {
		var se *sinkError
		var tl *tooLargeError
		switch {
		case errors.As(err, &se):
			// The destination failed (a full disk), not the source.
			return Result{}, newError(loc, Other, 0, se.err)
		case errors.As(err, &tl):
			return Result{}, newError(loc, TooLarge, 0, err)
		}
		return Result{}, failure(ctx, loc, err)
	}
	if err := raced(actx); err != nil {
		return Result{}, failure(ctx, loc, err)
	}
	res.Size, res.SHA256 = n, sum
	if want != "" && res.SHA256 != want {
		return Result{}, newError(loc, ChecksumMismatch, 0, fmt.Errorf("expected sha256 %s, got %s (%d bytes)", want, res.SHA256, n))
	}
	return res, nil
}

// copyCapped streams r into w through the SHA-256 hash, reading at most max+1 bytes (one
// buffer at a time), and returns the length and the lowercase hex digest. More than max bytes
// is a *tooLargeError; a failed write to w a *sinkError; a failed read the reader's error.
func copyCapped(w io.Writer, r io.Reader, max int64) (int64, string, error) {
	h := sha256.New()
	sw := &sinkWriter{w: w}
	n, err := io.Copy(io.MultiWriter(sw, h), io.LimitReader(r, max+1))
	switch {
	case sw.err != nil:
		return n, "", &sinkError{err: sw.err}
	case err != nil:
		return n, "", fmt.Errorf("read body: %w", err)
	case n > max:
		return n, "", &tooLargeError{max: max}
	}
	return n, hex.EncodeToString(h.Sum(nil)), nil
}

// sinkWriter remembers the destination's own error, to tell it from the source's.
type sinkWriter struct {
	w   io.Writer
	err error
}

func (s *sinkWriter) Write(p []byte) (int, error) {
	n, err := s.w.Write(p)
	if err != nil && s.err == nil {
		s.err = err
	}
	return n, err
}

// sinkError is a failed write to the destination of a download.
type sinkError struct{ err error }

func (e *sinkError) Error() string { return e.err.Error() }
func (e *sinkError) Unwrap() error { return e.err }

type s3Location struct {
	bucket, key string
}

type location struct {
	s3    *s3Location
	https *url.URL
}

// parseLocation accepts s3://bucket/key (the key taken verbatim, slashes and spaces included,
// no percent-decoding, as the AWS CLI does) and https://host[:port]/path.
func parseLocation(loc string) (location, error) {
	if rest, ok := strings.CutPrefix(loc, "s3://"); ok {
		bucket, key, _ := strings.Cut(rest, "/")
		switch {
		case bucket == "":
			return location{}, errors.New("no bucket in s3:// location")
		case key == "":
			return location{}, errors.New("no key in s3:// location")
		}
		return location{s3: &s3Location{bucket: bucket, key: key}}, nil
	}
	u, err := url.Parse(loc)
	if err != nil {
		return location{}, err
	}
	switch u.Scheme {
	case "https":
	case "http":
		return location{}, errors.New("http:// is not allowed: scripts are fetched only over https:// or from s3://")
	case "":
		return location{}, errors.New("not a URL: expected s3://bucket/key or https://host/path")
	default:
		return location{}, fmt.Errorf("unsupported scheme %q: expected s3:// or https://", u.Scheme)
	}
	if u.Host == "" || u.Hostname() == "" {
		return location{}, errors.New("no host in https:// location")
	}
	return location{https: u}, nil
}

func isSHA256Hex(s string) bool {
	if len(s) != 64 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}
