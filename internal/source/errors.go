package source

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// Kind classifies a download failure.
type Kind int

const (
	// Other is any failure not listed below (an unexpected status, a refused redirect, an SDK
	// configuration error such as missing credentials or region).
	Other Kind = iota
	// NotFound: S3 NoSuchKey, NoSuchBucket or NoSuchVersion, or HTTP 404.
	NotFound
	// Forbidden: HTTP 401/403, S3 AccessDenied, InvalidAccessKeyId, SignatureDoesNotMatch (and
	// versitygw's XAdminUserNotFound, its 404 for an unknown access key).
	Forbidden
	// TooLarge: the object is larger than the size cap.
	TooLarge
	// ChecksumMismatch: the downloaded bytes do not have the expected SHA-256.
	ChecksumMismatch
	// Untrusted: the server's TLS certificate failed verification.
	Untrusted
	// Network: connecting, TLS handshake, a timeout, a connection cut short or a body shorter
	// than its Content-Length.
	Network
	// Server: HTTP 5xx.
	Server
	// Invalid: the location or checksum cannot be used at all (not s3:// or https://, no
	// bucket or key, a checksum that is not 64 hex characters). Never retried.
	Invalid
	// Canceled: the caller's context ended (canceled or its deadline passed) during an attempt
	// or a wait. Never retried; errors.Is(err, context.Canceled) works.
	Canceled
)

var kindNames = map[Kind]string{
	Other:            "other",
	NotFound:         "not-found",
	Forbidden:        "forbidden",
	TooLarge:         "too-large",
	ChecksumMismatch: "checksum-mismatch",
	Untrusted:        "untrusted",
	Network:          "network",
	Server:           "server",
	Invalid:          "invalid",
	Canceled:         "canceled",
}

// String is a short stable name for logs ("not-found", "checksum-mismatch", …).
func (k Kind) String() string {
	if s, ok := kindNames[k]; ok {
		return s
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Error is a failed download.
type Error struct {
	Location   string // the scriptLocation or document location
	Kind       Kind
	Attempts   int   // how many attempts were made (0: none, the location was invalid)
	StatusCode int   // the HTTP status of the last response, when there was one
	Err        error // the last attempt's cause
}

// Error reads like
// "download s3://b/k: not found (404) after 3 attempts: operation error S3: GetObject, …".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("download ")
	b.WriteString(e.Location)
	b.WriteString(": ")
	b.WriteString(e.describe())
	switch {
	case e.Attempts == 1:
		b.WriteString(" after 1 attempt")
	case e.Attempts > 1:
		fmt.Fprintf(&b, " after %d attempts", e.Attempts)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

func (e *Error) describe() string {
	switch e.Kind {
	case NotFound:
		return "not found (" + e.statusOr(404) + ")"
	case Forbidden:
		return "forbidden (" + e.statusOr(403) + ")"
	case TooLarge:
		return "too large"
	case ChecksumMismatch:
		return "checksum mismatch"
	case Untrusted:
		return "server certificate is not trusted (add its CA to the system trust store, or point SSL_CERT_FILE at a PEM bundle that holds it)"
	case Network:
		return "network error"
	case Server:
		if e.StatusCode != 0 {
			return fmt.Sprintf("server error (%d)", e.StatusCode)
		}
		return "server error"
	case Invalid:
		return "invalid location"
	case Canceled:
		return "canceled"
	default:
		if e.StatusCode != 0 {
			return fmt.Sprintf("failed (HTTP %d)", e.StatusCode)
		}
		return "failed"
	}
}

func (e *Error) statusOr(code int) string {
	if e.StatusCode != 0 {
		code = e.StatusCode
	}
	return strconv.Itoa(code)
}

func (e *Error) Unwrap() error { return e.Err }

// KindOf returns the Kind of a download error, Other for any other non-nil error.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return Other
}

func newError(location string, kind Kind, status int, err error) *Error {
	return &Error{Location: location, Kind: kind, StatusCode: status, Err: err}
}

// kindOfStatus maps an HTTP status code to a Kind.
func kindOfStatus(code int) Kind {
	switch {
	case code == 404:
		return NotFound
	case code == 401 || code == 403:
		return Forbidden
	case code >= 500 && code <= 599:
		return Server
	default:
		return Other
	}
}

// classify turns a transport or SDK error into a Kind and, when known, an HTTP status code.
// ctx is the caller's context: when it is done, the failure is Canceled whatever the cause.
func classify(ctx context.Context, err error) (Kind, int) {
	if ctx.Err() != nil {
		return Canceled, 0
	}
	status := 0
	var re interface{ HTTPStatusCode() int }
	var smithyResp *smithyhttp.ResponseError
	if errors.As(err, &smithyResp) {
		status = smithyResp.HTTPStatusCode()
	} else if errors.As(err, &re) {
		status = re.HTTPStatusCode()
	}

	var (
		noKey     *types.NoSuchKey
		noBucket  *types.NoSuchBucket
		notFound  *types.NotFound
		apiErr    smithy.APIError
		unknownCA x509.UnknownAuthorityError
		invalid   x509.CertificateInvalidError
		hostname  x509.HostnameError
		verify    *tls.CertificateVerificationError
		sysRoots  x509.SystemRootsError
		netErr    net.Error
		opErr     *net.OpError
	)
	switch {
	case errors.As(err, &noKey), errors.As(err, &noBucket), errors.As(err, &notFound):
		return NotFound, status
	case errors.As(err, &verify), errors.As(err, &unknownCA), errors.As(err, &invalid),
		errors.As(err, &hostname), errors.As(err, &sysRoots):
		return Untrusted, status
	}
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode() {
		case "NoSuchKey", "NoSuchBucket", "NoSuchVersion", "NotFound":
			return NotFound, status
		case "AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "AllAccessDisabled",
			"InvalidToken", "ExpiredToken",
			// versitygw's answer (HTTP 404) to an access key it does not know.
			"XAdminUserNotFound":
			return Forbidden, status
		}
	}
	if status != 0 {
		return kindOfStatus(status), status
	}
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, context.DeadlineExceeded),
		errors.As(err, &netErr), errors.As(err, &opErr):
		return Network, 0
	}
	return Other, 0
}
