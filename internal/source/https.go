package source

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"
)

// userAgent names the executor to servers.
const userAgent = "pcs-lifecycle"

// NewHTTPClient returns the client used for https:// when Config.HTTPClient is nil: proxy from
// the environment (HTTPS_PROXY, NO_PROXY; read once per process by net/http), the system trust
// store (Go reads SSL_CERT_FILE and SSL_CERT_DIR once per process), TLS 1.2 or later, a 10 s
// connect and TLS handshake timeout, a 30 s wait for response headers, 60 s per request in
// all, and redirects followed only to https:// (at most 10).
func NewHTTPClient() *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			Proxy: http.ProxyFromEnvironment,
			DialContext: (&net.Dialer{
				Timeout:   10 * time.Second,
				KeepAlive: 30 * time.Second,
			}).DialContext,
			TLSClientConfig:       &tls.Config{MinVersion: tls.VersionTLS12},
			TLSHandshakeTimeout:   10 * time.Second,
			ResponseHeaderTimeout: 30 * time.Second,
			ExpectContinueTimeout: time.Second,
			IdleConnTimeout:       90 * time.Second,
			MaxIdleConns:          16,
			ForceAttemptHTTP2:     true,
		},
		Timeout:       DefaultAttemptTimeout,
		CheckRedirect: httpsOnlyRedirects(nil),
	}
}

// insecureRedirectError is a refused redirect to a URL that is not https://.
type insecureRedirectError struct {
	to string
}

func (e *insecureRedirectError) Error() string {
	return fmt.Sprintf("refusing redirect to %s: only https:// is allowed", e.to)
}

// httpsOnlyRedirects wraps a CheckRedirect policy (nil: net/http's default of 10 redirects)
// so that a redirect to anything but https:// is refused.
func httpsOnlyRedirects(next func(*http.Request, []*http.Request) error) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if req.URL.Scheme != "https" {
			return &insecureRedirectError{to: req.URL.Redacted()}
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
}

// getHTTPS is one GET of u; actx bounds the attempt, ctx is the caller's. It returns the body
// to stream (the caller closes it) and the response's metadata.
func (f *Fetcher) getHTTPS(actx, ctx context.Context, loc string, u *url.URL, max int64) (io.ReadCloser, Result, error) {
	req, err := http.NewRequestWithContext(actx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, Result{}, newError(loc, Invalid, 0, err)
	}
	req.Header.Set("User-Agent", userAgent)
	resp, err := f.http.Do(req)
	if err != nil {
		if resp != nil {
			_ = resp.Body.Close()
		}
		var redirect *insecureRedirectError
		if errors.As(err, &redirect) && ctx.Err() == nil {
			return nil, Result{}, newError(loc, Other, 0, err)
		}
		return nil, Result{}, failure(ctx, loc, err)
	}
	if resp.StatusCode != http.StatusOK {
		// Read a little so the connection can be reused; the body is not reported.
		_, _ = io.CopyN(io.Discard, resp.Body, 4096)
		resp.Body.Close()
		return nil, Result{}, newError(loc, kindOfStatus(resp.StatusCode), resp.StatusCode,
			fmt.Errorf("GET %s: HTTP %s", u.Redacted(), resp.Status))
	}
	if resp.ContentLength > max {
		resp.Body.Close()
		return nil, Result{}, newError(loc, TooLarge, 0,
			fmt.Errorf("Content-Length %d is over the %d-byte limit", resp.ContentLength, max))
	}
	return resp.Body, Result{ETag: resp.Header.Get("ETag")}, nil
}

// tooLargeError is a body over the cap.
type tooLargeError struct{ max int64 }

func (e *tooLargeError) Error() string {
	return fmt.Sprintf("more than %d bytes (the limit)", e.max)
}

// raced reports an attempt whose context ended although a whole response arrived. net/http
// returns a response that races the cancellation of its request, and a server may well answer
// the very close of the connection the cancellation caused (a handler that returns on
// r.Context().Done() sends an empty 200): such an answer is not trusted.
func raced(actx context.Context) error {
	if err := actx.Err(); err != nil {
		return fmt.Errorf("attempt ended before the download was complete: %w", context.Cause(actx))
	}
	return nil
}

// failure classifies err into an *Error. When the caller's context ended, the error is
// Canceled and wraps the context's cause.
func failure(ctx context.Context, loc string, err error) *Error {
	kind, status := classify(ctx, err)
	if kind == Canceled {
		cause := context.Cause(ctx)
		if !errors.Is(err, cause) {
			err = fmt.Errorf("%w (%w)", cause, err)
		}
	}
	return newError(loc, kind, status, err)
}
