package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// StartS3WithUsers starts a versitygw for this test alone, as StartS3 does, with its internal
// IAM (--iam-dir): users other than the root account can then be made with CreateUser. A user
// has no access to the root account's buckets (versitygw answers 403 AccessDenied).
func StartS3WithUsers(t testing.TB) *S3Server {
	t.Helper()
	base := t.TempDir()
	iam := filepath.Join(base, "iam")
	if err := os.MkdirAll(iam, 0o700); err != nil {
		t.Fatalf("testenv: %v", err)
	}
	s, err := startS3(base, "--iam-dir", iam)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	t.Cleanup(s.Stop)
	return s
}

// CreateUser makes a user with role "user" (versitygw admin create-user, as the root account).
func (s *S3Server) CreateUser(t testing.TB, access, secret string) {
	t.Helper()
	bin, err := findVersityGW()
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	cmd := exec.Command(bin, "admin", "--access", s.AccessKey, "--secret", s.SecretKey, "--endpoint-url", s.Endpoint,
		"create-user", "--access", access, "--secret", secret, "--role", "user")
	cmd.Env = versityEnv()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("testenv: versitygw admin create-user %s: %v\n%s", access, err, out)
	}
}
