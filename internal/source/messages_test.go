package source

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/testenv"
)

// The download errors an administrator reads: one line, what failed and what to do, no SDK
// request IDs and no "https response error" for an http:// endpoint; the whole SDK text stays
// available to DEBUG logging (Error.Debug).

func requireOneCleanLine(t *testing.T, err error) {
	t.Helper()
	require.Error(t, err)
	msg := err.Error()
	assert.NotContains(t, msg, "\n")
	assert.NotContains(t, msg, "RequestID")
	assert.NotContains(t, msg, "HostID")
	assert.NotContains(t, msg, "https response error")
	assert.NotContains(t, msg, "operation error")
}

// TestS3MessagesOverHTTP: versitygw listens on http://; the SDK's error text says "https
// response error" and carries request IDs: none of it reaches the message, all of it Debug.
func TestS3MessagesOverHTTP(t *testing.T) {
	srv, bucket := s3Env(t)
	require.True(t, strings.HasPrefix(srv.Endpoint, "http://"))
	_, err := New(quick(1)).Fetch(testContext(t), s3src(bucket, "missing.sh"))
	requireOneCleanLine(t, err)
	assert.Equal(t, "download s3://"+bucket+"/missing.sh: not found (404) after 1 attempt: NoSuchKey: no object with this key in bucket "+
		bucket+" (no s3VersionId pinned: the latest version)", err.Error())
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Contains(t, e.Debug(), "RequestID", "the SDK's text is kept for DEBUG")
	assert.True(t, strings.HasPrefix(e.Debug(), err.Error()+" ["))
}

// TestS3AccessDeniedUser: a user of versitygw's own IAM without access to the bucket gets
// 403 AccessDenied; the message names the IAM actions the instance role needs on the object,
// s3:GetObjectVersion when a version is pinned.
func TestS3AccessDeniedUser(t *testing.T) {
	srv := testenv.StartS3WithUsers(t)
	srv.Env(t)
	bucket := srv.NewBucket(t)
	srv.Put(t, bucket, "scripts/s.sh", []byte("echo\n"))
	srv.CreateUser(t, "nodeuser", "nodeusersecret")
	t.Setenv("AWS_ACCESS_KEY_ID", "nodeuser")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "nodeusersecret")

	src := s3src(bucket, "scripts/s.sh")
	_, err := New(quick(2)).Fetch(testContext(t), src)
	requireOneCleanLine(t, err)
	assert.Equal(t, Forbidden, KindOf(err))
	assert.Equal(t, "download s3://"+bucket+"/scripts/s.sh: access denied (403) after 2 attempts: AccessDenied: the instance role needs s3:GetObject on arn:aws:s3:::"+
		bucket+"/scripts/s.sh; without s3:ListBucket on arn:aws:s3:::"+bucket+", S3 also answers 403 for a key that does not exist", err.Error())

	src.S3VersionID = "01ARZ3NDEKTSV4RRFFQ69G5FAV"
	_, err = New(quick(1)).Fetch(testContext(t), src)
	requireOneCleanLine(t, err)
	assert.Contains(t, err.Error(), "AccessDenied: the instance role needs s3:GetObject and s3:GetObjectVersion on arn:aws:s3:::"+
		bucket+"/scripts/s.sh (s3VersionId pinned)")
}

// TestS3NotFoundPinned: a pinned version of a key that does not exist says the version was
// pinned.
func TestS3NotFoundPinned(t *testing.T) {
	_, bucket := s3Env(t)
	src := s3src(bucket, "absent.sh")
	src.S3VersionID = "01ARZ3NDEKTSV4RRFFQ69G5FAV"
	_, err := New(quick(1)).Fetch(testContext(t), src)
	requireOneCleanLine(t, err)
	assert.Equal(t, NotFound, KindOf(err))
	assert.Contains(t, err.Error(), "not found (404) after 1 attempt: ")
	assert.Contains(t, err.Error(), "01ARZ3NDEKTSV4RRFFQ69G5FAV")
}

// TestNetworkMessages: DNS, TLS and refused connections are named as such, for https:// and
// for an S3 endpoint.
func TestNetworkMessages(t *testing.T) {
	plain := httptest.NewServer(http.NotFoundHandler()) // plain HTTP on loopback
	t.Cleanup(plain.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := ln.Addr().String()
	require.NoError(t, ln.Close())

	for _, tc := range []struct {
		name, loc, want string
	}{
		{"dns", "https://no-such-host.invalid/x.sh", "download https://no-such-host.invalid/x.sh: DNS lookup of no-such-host.invalid failed after 1 attempt: "},
		{"tls to a plain http server", "https://" + plain.Listener.Addr().String() + "/x.sh",
			"TLS handshake failed (the server did not answer in TLS: is it plain http?) after 1 attempt: "},
		{"refused", "https://" + closed + "/x.sh", "download https://" + closed + "/x.sh: connection refused after 1 attempt: dial tcp " + closed + ": connect: connection refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(quick(1)).Fetch(testContext(t), src(tc.loc))
			requireOneCleanLine(t, err)
			assert.Equal(t, Network, KindOf(err), err.Error())
			assert.Contains(t, err.Error(), tc.want)
		})
	}

	t.Run("s3 endpoint refused", func(t *testing.T) {
		srv := testenv.SharedS3(t)
		srv.Env(t)
		t.Setenv("AWS_ENDPOINT_URL_S3", "http://"+closed)
		_, err := New(quick(1)).Fetch(testContext(t), s3src("some-bucket", "x.sh"))
		requireOneCleanLine(t, err)
		assert.Equal(t, Network, KindOf(err), err.Error())
		assert.Contains(t, err.Error(), "download s3://some-bucket/x.sh: connection refused after 1 attempt: dial tcp "+closed)
	})
}
