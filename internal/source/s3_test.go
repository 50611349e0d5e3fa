package source

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/testenv"
	"github.com/pcs-lifecycle/pcs-lifecycle/pkg/lifecycle"
)

func sha(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// s3Env starts (or reuses) versitygw, points this test's AWS environment at it and returns it
// with a fresh bucket.
func s3Env(t *testing.T) (*testenv.S3Server, string) {
	t.Helper()
	srv := testenv.SharedS3(t)
	srv.Env(t)
	return srv, srv.NewBucket(t)
}

// quick is a Config for tests: short waits.
func quick(attempts int) Config {
	return Config{Attempts: attempts, Backoff: time.Millisecond}
}

func s3src(bucket, key string) lifecycle.ScriptSource {
	return lifecycle.ScriptSource{ScriptLocation: "s3://" + bucket + "/" + key}
}

func TestS3FetchOK(t *testing.T) {
	srv, bucket := s3Env(t)
	data := []byte("#!/bin/sh\necho hello\n")
	etag := srv.Put(t, bucket, "scripts/hello.sh", data)

	res, err := New(quick(3)).Fetch(testContext(t), s3src(bucket, "scripts/hello.sh"))
	require.NoError(t, err)
	assert.Equal(t, data, res.Data)
	assert.Equal(t, sha(data), res.SHA256)
	assert.Equal(t, 1, res.Attempts)
	assert.Equal(t, etag, res.ETag)
	assert.Empty(t, res.VersionID, "an unversioned bucket has no version id")
}

func TestS3KeyWithSpacesAndSlashes(t *testing.T) {
	srv, bucket := s3Env(t)
	key := "dir one/dir two/my script+v1.sh"
	data := []byte("echo spaced\n")
	srv.Put(t, bucket, key, data)

	res, err := New(quick(1)).Fetch(testContext(t), s3src(bucket, key))
	require.NoError(t, err)
	assert.Equal(t, data, res.Data)
}

func TestS3Checksum(t *testing.T) {
	srv, bucket := s3Env(t)
	data := []byte("echo checksum\n")
	srv.Put(t, bucket, "c.sh", data)
	f := New(quick(3))

	for name, sum := range map[string]string{"lower": sha(data), "upper": strings.ToUpper(sha(data))} {
		t.Run(name, func(t *testing.T) {
			src := s3src(bucket, "c.sh")
			src.Checksum = sum
			res, err := f.Fetch(testContext(t), src)
			require.NoError(t, err)
			assert.Equal(t, data, res.Data)
			assert.Equal(t, sha(data), res.SHA256)
		})
	}

	t.Run("mismatch", func(t *testing.T) {
		src := s3src(bucket, "c.sh")
		src.Checksum = strings.Repeat("ab", 32)
		res, err := f.Fetch(testContext(t), src)
		require.Error(t, err)
		assert.Nil(t, res.Data, "no data on error")
		var e *Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, ChecksumMismatch, e.Kind)
		assert.Equal(t, 3, e.Attempts)
		assert.Contains(t, err.Error(), "checksum mismatch after 3 attempts")
		assert.Contains(t, err.Error(), "expected sha256 "+strings.Repeat("ab", 32))
		assert.Contains(t, err.Error(), "got "+sha(data))
	})
}

func TestS3NotFound(t *testing.T) {
	_, bucket := s3Env(t)

	t.Run("no such key", func(t *testing.T) {
		var retries []int
		cfg := quick(3)
		cfg.OnRetry = func(loc string, attempt int, err error, wait time.Duration) {
			assert.Equal(t, "s3://"+bucket+"/missing.sh", loc)
			assert.Equal(t, NotFound, KindOf(err))
			retries = append(retries, attempt)
		}
		res, err := New(cfg).Fetch(testContext(t), s3src(bucket, "missing.sh"))
		require.Error(t, err)
		assert.Nil(t, res.Data)
		var e *Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, NotFound, e.Kind)
		assert.Equal(t, 3, e.Attempts)
		assert.Equal(t, 404, e.StatusCode)
		assert.Equal(t, []int{1, 2}, retries)
		assert.Equal(t, "download s3://"+bucket+"/missing.sh: not found (404) after 3 attempts: NoSuchKey: no object with this key in bucket "+
			bucket+" (no s3VersionId pinned: the latest version)", err.Error())
	})

	t.Run("no such bucket", func(t *testing.T) {
		_, err := New(quick(2)).Fetch(testContext(t), s3src("no-such-bucket-here", "x.sh"))
		require.Error(t, err)
		assert.Equal(t, NotFound, KindOf(err))
		assert.Equal(t, "download s3://no-such-bucket-here/x.sh: not found (404) after 2 attempts: NoSuchBucket: bucket no-such-bucket-here does not exist", err.Error())
	})
}

func TestS3WrongCredentials(t *testing.T) {
	srv, bucket := s3Env(t)
	srv.Put(t, bucket, "s.sh", []byte("echo\n"))

	t.Run("wrong secret", func(t *testing.T) {
		t.Setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
		_, err := New(quick(2)).Fetch(testContext(t), s3src(bucket, "s.sh"))
		require.Error(t, err)
		assert.Equal(t, Forbidden, KindOf(err), err.Error())
		assert.Equal(t, "download s3://"+bucket+"/s.sh: access denied (403) after 2 attempts: SignatureDoesNotMatch: the credentials were refused (unknown access key, wrong secret or expired token)", err.Error())
	})
	// versitygw answers an unknown access key with 404 XAdminUserNotFound (S3: 403
	// InvalidAccessKeyId); it is still a credentials problem.
	t.Run("unknown access key", func(t *testing.T) {
		t.Setenv("AWS_ACCESS_KEY_ID", "AKIDUNKNOWN")
		_, err := New(quick(1)).Fetch(testContext(t), s3src(bucket, "s.sh"))
		require.Error(t, err)
		assert.Equal(t, Forbidden, KindOf(err), err.Error())
	})
}

func TestS3SizeCap(t *testing.T) {
	srv, bucket := s3Env(t)
	exact := bytes.Repeat([]byte("a"), DefaultMaxSize)
	over := bytes.Repeat([]byte("b"), DefaultMaxSize+1)
	srv.Put(t, bucket, "exact.sh", exact)
	srv.Put(t, bucket, "over.sh", over)
	f := New(quick(1))

	res, err := f.Fetch(testContext(t), s3src(bucket, "exact.sh"))
	require.NoError(t, err, "exactly 2 MiB is accepted")
	assert.Len(t, res.Data, DefaultMaxSize)

	res, err = f.Fetch(testContext(t), s3src(bucket, "over.sh"))
	require.Error(t, err)
	assert.Nil(t, res.Data)
	assert.Equal(t, TooLarge, KindOf(err))
	assert.Contains(t, err.Error(), "too large after 1 attempt: object size 2097153 is over the 2097152-byte limit")

	t.Run("document cap is 1 MiB", func(t *testing.T) {
		srv.Put(t, bucket, "doc.json", bytes.Repeat([]byte(" "), DocumentMaxSize+1))
		_, err := f.FetchDocument(testContext(t), "s3://"+bucket+"/doc.json")
		assert.Equal(t, TooLarge, KindOf(err), "%v", err)
	})
}

func TestS3FetchDocument(t *testing.T) {
	srv, bucket := s3Env(t)
	doc := []byte(`{"stages":{}}`)
	srv.Put(t, bucket, "config/doc.json", doc)
	got, err := New(quick(1)).FetchDocument(testContext(t), "s3://"+bucket+"/config/doc.json")
	require.NoError(t, err)
	assert.Equal(t, doc, got)
}

// versitygw names a bucket's owner by the root account's access key ID (AWS uses the 12-digit
// account ID) and enforces x-amz-expected-bucket-owner: a match passes, anything else is
// AccessDenied.
func TestS3ExpectedBucketOwner(t *testing.T) {
	srv, bucket := s3Env(t)
	srv.Put(t, bucket, "o.sh", []byte("echo owner\n"))

	cfg := quick(1)
	cfg.ExpectedBucketOwner = srv.AccessKey
	res, err := New(cfg).Fetch(testContext(t), s3src(bucket, "o.sh"))
	require.NoError(t, err)
	assert.Equal(t, "echo owner\n", string(res.Data))

	cfg.ExpectedBucketOwner = "111122223333"
	_, err = New(cfg).Fetch(testContext(t), s3src(bucket, "o.sh"))
	require.Error(t, err)
	assert.Equal(t, Forbidden, KindOf(err), err.Error())
	assert.Equal(t, "download s3://"+bucket+"/o.sh: access denied (403) after 1 attempt: AccessDenied: the instance role needs s3:GetObject on arn:aws:s3:::"+
		bucket+"/o.sh, and the bucket must belong to account 111122223333 (--expected-bucket-owner); without s3:ListBucket on arn:aws:s3:::"+
		bucket+", S3 also answers 403 for a key that does not exist", err.Error())
}

// versitygw's posix backend supports versioning (testenv starts it with --versioning-dir).
func TestS3VersionID(t *testing.T) {
	srv, bucket := s3Env(t)
	v1 := srv.PutVersioned(t, bucket, "v.sh", []byte("echo one\n"))
	v2 := srv.PutVersioned(t, bucket, "v.sh", []byte("echo two\n"))
	require.NotEqual(t, v1, v2)
	f := New(quick(1))

	src := s3src(bucket, "v.sh")
	res, err := f.Fetch(testContext(t), src)
	require.NoError(t, err)
	assert.Equal(t, "echo two\n", string(res.Data), "no version id: the latest")
	assert.Equal(t, v2, res.VersionID)

	src.S3VersionID = v1
	res, err = f.Fetch(testContext(t), src)
	require.NoError(t, err)
	assert.Equal(t, "echo one\n", string(res.Data), "the pinned version")
	assert.Equal(t, v1, res.VersionID)

	t.Run("unknown version", func(t *testing.T) {
		src.S3VersionID = "01ARZ3NDEKTSV4RRFFQ69G5FAV"
		_, err := f.Fetch(testContext(t), src)
		require.Error(t, err)
		// versitygw answers NoSuchVersion (404), as S3 does: the version id was sent.
		assert.Equal(t, NotFound, KindOf(err), err.Error())
		assert.Equal(t, "download s3://"+bucket+"/v.sh: not found (404) after 1 attempt: NoSuchVersion: the object has no version 01ARZ3NDEKTSV4RRFFQ69G5FAV (s3VersionId)", err.Error())
	})
}

// With AWS_ENDPOINT_URL_S3 (or AWS_ENDPOINT_URL) set the default client addresses buckets by
// path. The end-to-end fetch goes to http://localhost:PORT, a name that virtual-hosted
// addressing would turn into <bucket>.localhost (which versitygw, run without
// --virtual-domain, would not understand); path style is asserted first so that no such name
// is ever looked up.
func TestS3PathStyleWithEndpointOverride(t *testing.T) {
	srv, bucket := s3Env(t)
	data := []byte("echo path style\n")
	srv.Put(t, bucket, "p.sh", data)
	localhost := strings.Replace(srv.Endpoint, "127.0.0.1", "localhost", 1)

	for _, env := range []string{"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"} {
		t.Run(env, func(t *testing.T) {
			t.Setenv("AWS_ENDPOINT_URL_S3", "")
			t.Setenv("AWS_ENDPOINT_URL", "")
			unsetenv(t, "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")
			t.Setenv(env, localhost)

			f := New(quick(1))
			client, err := f.s3Client(testContext(t))
			require.NoError(t, err)
			opts := client.(*s3.Client).Options()
			require.True(t, opts.UsePathStyle)
			require.Equal(t, localhost, *opts.BaseEndpoint)

			res, err := f.Fetch(testContext(t), s3src(bucket, "p.sh"))
			require.NoError(t, err)
			assert.Equal(t, data, res.Data)
		})
	}

	t.Run("no override", func(t *testing.T) {
		unsetenv(t, "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")
		client, err := NewS3Client(testContext(t))
		require.NoError(t, err)
		assert.False(t, client.Options().UsePathStyle)
		assert.Nil(t, client.Options().BaseEndpoint)
	})
}

func TestS3NoRegion(t *testing.T) {
	srv, bucket := s3Env(t)
	srv.Put(t, bucket, "r.sh", []byte("echo\n"))
	unsetenv(t, "AWS_REGION", "AWS_DEFAULT_REGION")
	// IMDS is disabled (AWS_EC2_METADATA_DISABLED=true), so no region can be found.
	_, err := New(quick(2)).Fetch(testContext(t), s3src(bucket, "r.sh"))
	require.Error(t, err)
	assert.Equal(t, Other, KindOf(err))
	assert.Contains(t, err.Error(), "AWS_REGION")
	assert.Contains(t, err.Error(), "after 2 attempts")
}

// unsetenv removes variables for the rest of the test, restoring them afterwards.
func unsetenv(t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		t.Setenv(n, "")
		require.NoError(t, os.Unsetenv(n))
	}
}

// A server of the test's own (testenv.StartS3), e.g. for tests that change its contents on
// disk; it is stopped when the test ends.
func TestS3OwnServer(t *testing.T) {
	srv := testenv.StartS3(t)
	srv.Env(t)
	srv.Put(t, "own-bucket", "k.sh", []byte("echo own\n"))
	res, err := New(quick(1)).Fetch(testContext(t), s3src("own-bucket", "k.sh"))
	require.NoError(t, err)
	assert.Equal(t, "echo own\n", string(res.Data))
	// The posix backend keeps the object as a file under Dir/bucket/key.
	onDisk, err := os.ReadFile(filepath.Join(srv.Dir, "own-bucket", "k.sh"))
	require.NoError(t, err)
	assert.Equal(t, res.Data, onDisk)
}
