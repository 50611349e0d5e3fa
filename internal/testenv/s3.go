// Package testenv starts the real parts integration tests run against, on loopback only: an
// S3-compatible server (versitygw), an HTTPS server with its own certificate authority, a
// CONNECT proxy. A part that is missing fails the test with a message saying how to install it.
package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// VersityGWInstall is the command that installs the S3 server the tests need.
const VersityGWInstall = "go install github.com/versity/versitygw/cmd/versitygw@v1.8.0"

// Credentials of the root account of every test S3 server.
const (
	S3AccessKey = "pcstestaccess"
	S3SecretKey = "pcstestsecret0123456789"
	S3Region    = "us-east-1"
)

// S3Server is a running versitygw with its posix backend: every bucket is a folder of Dir.
// Object versioning is available (the server is started with --versioning-dir); a bucket is
// versioned once PutVersioned (or the S3 API) enables it.
type S3Server struct {
	Endpoint      string // http://127.0.0.1:PORT
	AccessKey     string
	SecretKey     string
	Region        string
	Dir           string // the posix backend's root: bucket folders
	VersioningDir string // where versitygw keeps older versions

	cmd     *exec.Cmd
	waitErr chan error
	logFile string
	buckets atomic.Int64
	stopped sync.Once
}

// StartS3 starts a versitygw for this test alone, on 127.0.0.1 with a fresh directory; it is
// stopped when the test ends. The test fails if versitygw is not installed.
func StartS3(t testing.TB) *S3Server {
	t.Helper()
	s, err := startS3(t.TempDir())
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	t.Cleanup(s.Stop)
	return s
}

var shared struct {
	mu  sync.Mutex
	srv *S3Server
	dir string
	err error
}

// SharedS3 returns the versitygw shared by every test of this test binary, starting it on
// first use. Tests sharing it must use their own buckets (NewBucket). Stop it from TestMain:
//
//	func TestMain(m *testing.M) {
//		code := m.Run()
//		testenv.StopSharedS3()
//		os.Exit(code)
//	}
func SharedS3(t testing.TB) *S3Server {
	t.Helper()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.srv == nil && shared.err == nil {
		dir, err := os.MkdirTemp("", "pcs-testenv-s3-")
		if err != nil {
			shared.err = err
		} else {
			shared.dir = dir
			shared.srv, shared.err = startS3(dir)
		}
	}
	if shared.err != nil {
		t.Fatalf("testenv: %v", shared.err)
	}
	return shared.srv
}

// StopSharedS3 stops the shared server, if it was started, and removes its directory.
func StopSharedS3() {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.srv != nil {
		shared.srv.Stop()
		shared.srv = nil
	}
	if shared.dir != "" {
		_ = os.RemoveAll(shared.dir)
		shared.dir = ""
	}
	shared.err = nil
}

// findVersityGW looks in PATH, then in $(go env GOBIN) and $(go env GOPATH)/bin.
func findVersityGW() (string, error) {
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p, nil
	}
	var dirs []string
	if out, err := exec.Command("go", "env", "GOBIN", "GOPATH").Output(); err == nil {
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if len(lines) > 0 && strings.TrimSpace(lines[0]) != "" {
			dirs = append(dirs, strings.TrimSpace(lines[0]))
		}
		if len(lines) > 1 {
			for _, gp := range filepath.SplitList(strings.TrimSpace(lines[1])) {
				dirs = append(dirs, filepath.Join(gp, "bin"))
			}
		}
	}
	if home, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, filepath.Join(home, "go", "bin"))
	}
	for _, d := range dirs {
		p := filepath.Join(d, "versitygw")
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("versitygw (the S3 server these tests run against) is not installed: install it with `%s`", VersityGWInstall)
}

func startS3(base string, extra ...string) (*S3Server, error) {
	bin, err := findVersityGW()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(base, "buckets")
	verDir := filepath.Join(base, "versions")
	for _, d := range []string{dir, verDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	var lastErr error
	// The free port is found by listening and closing; another process may take it in
	// between, so try a few ports.
	for try := 0; try < 5; try++ {
		s, err := startS3On(bin, base, dir, verDir, try, extra...)
		if err == nil {
			return s, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	_, port, err := net.SplitHostPort(ln.Addr().String())
	return port, err
}

// versityEnv is the environment of the server: ours without variables versitygw or the AWS
// SDK would read, plus the root account.
func versityEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "VGW_") || strings.HasPrefix(name, "ROOT_") || strings.HasPrefix(name, "AWS_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "ROOT_ACCESS_KEY="+S3AccessKey, "ROOT_SECRET_KEY="+S3SecretKey)
}

func startS3On(bin, base, dir, verDir string, try int, extra ...string) (*S3Server, error) {
	port, err := freePort()
	if err != nil {
		return nil, fmt.Errorf("find a free port for versitygw: %w", err)
	}
	addr := net.JoinHostPort("127.0.0.1", port)
	logFile := filepath.Join(base, fmt.Sprintf("versitygw-%d.log", try))
	log, err := os.Create(logFile)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	args := append(append([]string{"--port", addr, "--quiet"}, extra...), "posix", "--versioning-dir", verDir, dir)
	cmd := exec.Command(bin, args...)
	cmd.Env = versityEnv()
	cmd.Stdout = log
	cmd.Stderr = log
	cmd.Dir = base
	// Should the test binary die without stopping it (a panic, a -timeout), the kernel kills
	// the server too. (Linux; the signal follows the OS thread that started it, which the Go
	// runtime keeps for the life of the process.)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	s := &S3Server{
		Endpoint:      "http://" + addr,
		AccessKey:     S3AccessKey,
		SecretKey:     S3SecretKey,
		Region:        S3Region,
		Dir:           dir,
		VersioningDir: verDir,
		cmd:           cmd,
		waitErr:       make(chan error, 1),
		logFile:       logFile,
	}
	go func() { s.waitErr <- cmd.Wait() }()

	deadline := time.Now().Add(15 * time.Second)
	for {
		select {
		case err := <-s.waitErr:
			s.waitErr <- err
			return nil, fmt.Errorf("versitygw on %s exited before accepting connections (%v); its output:\n%s", addr, err, s.output())
		default:
		}
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			_ = c.Close()
			return s, nil
		}
		if time.Now().After(deadline) {
			s.Stop()
			return nil, fmt.Errorf("versitygw on %s did not accept connections within 15s; its output:\n%s", addr, s.output())
		}
		time.Sleep(25 * time.Millisecond)
	}
}

func (s *S3Server) output() string {
	b, _ := os.ReadFile(s.logFile)
	b = bytes.TrimSpace(b)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// Stop kills the server and waits for it to exit. StartS3 registers it as a test cleanup.
func (s *S3Server) Stop() {
	s.stopped.Do(func() {
		_ = s.cmd.Process.Kill()
		select {
		case err := <-s.waitErr:
			s.waitErr <- err
		case <-time.After(10 * time.Second):
		}
	})
}

// Env points the AWS SDK of this test process at the server: AWS_ENDPOINT_URL_S3, the root
// account's keys, AWS_REGION=us-east-1, and AWS_EC2_METADATA_DISABLED=true so that nothing
// reaches for the instance metadata service. It also clears variables that would override
// them (profiles, session tokens, the global endpoint, config files).
func (s *S3Server) Env(t testing.TB) {
	t.Helper()
	t.Setenv("AWS_ENDPOINT_URL_S3", s.Endpoint)
	t.Setenv("AWS_ACCESS_KEY_ID", s.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s.SecretKey)
	t.Setenv("AWS_REGION", s.Region)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	empty := filepath.Join(t.TempDir(), "aws-empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatalf("testenv: %v", err)
	}
	t.Setenv("AWS_CONFIG_FILE", empty)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", empty)
	for _, name := range []string{"AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL", "AWS_DEFAULT_REGION", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN"} {
		t.Setenv(name, "") // registers restoration
		os.Unsetenv(name)
	}
}

// Client returns an S3 client for the server's root account (path-style, static credentials,
// built without loading any shared configuration or contacting IMDS).
func (s *S3Server) Client() *s3.Client {
	return s3.New(s3.Options{
		Region:       s.Region,
		BaseEndpoint: aws.String(s.Endpoint),
		UsePathStyle: true,
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: s.AccessKey, SecretAccessKey: s.SecretKey, Source: "testenv"}, nil
		}),
	})
}

func apiContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 30*time.Second)
}

// NewBucket creates a bucket with a name unique on this server and returns the name.
func (s *S3Server) NewBucket(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("test-bucket-%04d", s.buckets.Add(1))
	s.CreateBucket(t, name)
	return name
}

// CreateBucket creates bucket (owned by the root account); an existing bucket is fine.
func (s *S3Server) CreateBucket(t testing.TB, bucket string) {
	t.Helper()
	ctx, cancel := apiContext()
	defer cancel()
	_, err := s.Client().CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)})
	var owned *types.BucketAlreadyOwnedByYou
	if err != nil && !errors.As(err, &owned) {
		t.Fatalf("testenv: create bucket %q: %v", bucket, err)
	}
}

// Put stores data as bucket/key through the S3 API, creating the bucket if needed, and
// returns the object's ETag.
func (s *S3Server) Put(t testing.TB, bucket, key string, data []byte) string {
	t.Helper()
	s.CreateBucket(t, bucket)
	out := s.put(t, bucket, key, data)
	return aws.ToString(out.ETag)
}

// PutVersioned enables versioning on bucket (creating it if needed), stores data as
// bucket/key and returns the new version's ID.
func (s *S3Server) PutVersioned(t testing.TB, bucket, key string, data []byte) string {
	t.Helper()
	s.CreateBucket(t, bucket)
	ctx, cancel := apiContext()
	defer cancel()
	_, err := s.Client().PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{
		Bucket:                  aws.String(bucket),
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled},
	})
	if err != nil {
		t.Fatalf("testenv: enable versioning on %q: %v", bucket, err)
	}
	out := s.put(t, bucket, key, data)
	if aws.ToString(out.VersionId) == "" {
		t.Fatalf("testenv: put %s/%s: versitygw returned no version id", bucket, key)
	}
	return aws.ToString(out.VersionId)
}

func (s *S3Server) put(t testing.TB, bucket, key string, data []byte) *s3.PutObjectOutput {
	t.Helper()
	ctx, cancel := apiContext()
	defer cancel()
	out, err := s.Client().PutObject(ctx, &s3.PutObjectInput{
		Bucket:        aws.String(bucket),
		Key:           aws.String(key),
		Body:          bytes.NewReader(data),
		ContentLength: aws.Int64(int64(len(data))),
	})
	if err != nil {
		t.Fatalf("testenv: put %s/%s: %v", bucket, key, err)
	}
	return out
}
