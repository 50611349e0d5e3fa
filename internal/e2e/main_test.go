// Package e2e_test drives the real pcs-lifecycle binary, built once per test binary, against
// the real parts SPEC.md names: versitygw for s3:// and a local HTTPS server with its own CA
// for https://. Every node is a sandbox (--root) with its own instance and boot ids; nothing
// leaves loopback, and AWS_EC2_METADATA_DISABLED=true keeps the SDK away from IMDS.
package e2e_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/testenv"
)

// Values the test binary is linked with, so that `version` can be checked exactly.
const (
	testVersion = "e2e-1.2.3"
	testCommit  = "e2ecommit0"
)

var (
	binPath    string // the pcs-lifecycle under test
	awsEmpty   string // an empty AWS config/credentials file
	workDir    string // TestMain's scratch folder
	cliPackage = "github.com/pcs-lifecycle/pcs-lifecycle/internal/cli"
)

func TestMain(m *testing.M) {
	os.Exit(mainWithCode(m))
}

func mainWithCode(m *testing.M) int {
	var err error
	workDir, err = os.MkdirTemp("", "pcs-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(workDir)
	defer testenv.StopSharedS3()

	modRoot, err := testenv.ModuleRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	binPath = filepath.Join(workDir, "pcs-lifecycle")
	ldflags := fmt.Sprintf("-X %s.Version=%s -X %s.Commit=%s", cliPackage, testVersion, cliPackage, testCommit)
	args, cgo := []string{"build", "-ldflags", ldflags, "-o", binPath}, "CGO_ENABLED=0"
	if raceBuild {
		// The race detector needs cgo; a race in the executor makes it exit 66 (GORACE in
		// node.environ) with the report on stderr, which every run checks.
		args, cgo = append(args, "-race"), "CGO_ENABLED=1"
	}
	build := exec.Command("go", append(args, "./cmd/pcs-lifecycle")...)
	build.Dir = modRoot
	build.Env = append(os.Environ(), cgo)
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: go build ./cmd/pcs-lifecycle failed: %v\n%s", err, out)
		return 1
	}
	awsEmpty = filepath.Join(workDir, "aws-empty")
	if err := os.WriteFile(awsEmpty, nil, 0o600); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	return m.Run()
}
