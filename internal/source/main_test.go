package source

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/testenv"
	"github.com/pcs-lifecycle/pcs-lifecycle/pkg/lifecycle"
)

// helperEnv, when "1", makes the test binary act as a one-shot fetch helper instead of running
// tests (see runHelper).
const helperEnv = "PCS_SOURCE_TEST_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		os.Exit(runHelper())
	}
	// No test may reach the real instance metadata service.
	os.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	code := m.Run()
	testenv.StopSharedS3()
	os.Exit(code)
}

// helperResult is what the helper process prints.
type helperResult struct {
	OK     bool   `json:"ok"`
	SHA256 string `json:"sha256,omitempty"`
	Data   string `json:"data,omitempty"`
	Kind   string `json:"kind,omitempty"`
	Error  string `json:"error,omitempty"`
}

// runHelper fetches $PCS_SOURCE_TEST_URL once with the production defaults (NewHTTPClient:
// system trust store, proxy from the environment) and prints a helperResult. It runs in a
// fresh process because net/http reads HTTPS_PROXY/NO_PROXY, and crypto/x509 reads
// SSL_CERT_FILE, only once per process: a test setting them with t.Setenv after the first
// use in this process would test nothing.
func runHelper() int {
	f := New(Config{Attempts: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := f.Fetch(ctx, lifecycle.ScriptSource{ScriptLocation: os.Getenv("PCS_SOURCE_TEST_URL")})
	out := helperResult{OK: err == nil, SHA256: res.SHA256, Data: string(res.Data)}
	if err != nil {
		out.Kind = KindOf(err).String()
		out.Error = err.Error()
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// fetchInSubprocess runs the helper with a clean environment plus env (KEY=VALUE) and the URL.
func fetchInSubprocess(t *testing.T, url string, env ...string) helperResult {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append([]string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + t.TempDir(),
		helperEnv + "=1",
		"PCS_SOURCE_TEST_URL=" + url,
		"AWS_EC2_METADATA_DISABLED=true",
		// An empty bundle directory: only SSL_CERT_FILE (when given) adds trust.
		"SSL_CERT_DIR=" + t.TempDir(),
	}, env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helper process: %v\nstderr:\n%s", err, stderr.String())
	}
	var res helperResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("helper output %q: %v\nstderr:\n%s", out, err, stderr.String())
	}
	return res
}
