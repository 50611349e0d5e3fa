package testenv

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// IMDSMockModule is AWS's instance metadata mock, as scripts/test-deps.sh installs it into the
// project's .tools/.
const IMDSMockModule = "github.com/aws/amazon-ec2-metadata-mock/cmd/ec2-metadata-mock@v1.13.0"

// IMDS is amazon-ec2-metadata-mock serving on 127.0.0.1, IMDSv2 only: every request needs a
// session token (PUT /latest/api/token), as on an instance that requires IMDSv2.
type IMDS struct {
	// Endpoint is http://127.0.0.1:PORT, for AWS_EC2_METADATA_SERVICE_ENDPOINT.
	Endpoint   string
	InstanceID string
	Region     string
}

// StartIMDS starts the metadata mock answering instanceID and region (in the instance identity
// document, where the SDK reads the region); it is stopped when the test ends.
func StartIMDS(t testing.TB, instanceID, region string) *IMDS {
	t.Helper()
	bin, err := findTool("ec2-metadata-mock")
	if err != nil {
		t.Fatalf("amazon-ec2-metadata-mock (the IMDS these tests run against) is not installed: install it with `GOBIN=%s go install %s` (or run scripts/test-deps.sh)", toolsDir(), IMDSMockModule)
	}
	dir := t.TempDir()
	cfg := map[string]any{
		"metadata": map[string]any{"values": map[string]any{
			"instance-id":                 instanceID,
			"placement-availability-zone": region + "a",
			"placement-region":            region,
		}},
		"dynamic": map[string]any{"values": map[string]any{
			"instance-identity-document": map[string]any{
				"accountId": "123456789012", "architecture": "x86_64", "availabilityZone": region + "a",
				"imageId": "ami-0123456789abcdef0", "instanceId": instanceID, "instanceType": "c7i.large",
				"pendingTime": "2026-01-01T00:00:00Z", "privateIp": "10.0.0.10", "region": region,
				"version": "2017-09-30",
			},
		}},
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfgFile := filepath.Join(dir, "aemm-config.json")
	if err := os.WriteFile(cfgFile, b, 0o644); err != nil {
		t.Fatal(err)
	}
	var lastErr error
	// A free port is found by listening and closing; another process may take it in between.
	for try := 0; try < 5; try++ {
		m, err := startIMDSOn(t, bin, dir, cfgFile, try)
		if err == nil {
			m.InstanceID, m.Region = instanceID, region
			return m
		}
		lastErr = err
	}
	t.Fatalf("start amazon-ec2-metadata-mock: %v", lastErr)
	return nil
}

func startIMDSOn(t testing.TB, bin, dir, cfgFile string, try int) (*IMDS, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, fmt.Sprintf("mock-%d.log", try))
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	cmd := exec.Command(bin, "--hostname", "127.0.0.1", "--port", port, "--imdsv2", "--config-file", cfgFile)
	cmd.Dir = dir
	// HOME is the scratch folder: the mock reads and may write its configuration there.
	cmd.Env = append(os.Environ(), "HOME="+dir)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() {
		_ = cmd.Process.Kill()
		<-exited
	}
	m := &IMDS{Endpoint: "http://" + net.JoinHostPort("127.0.0.1", port)}
	// Ready once it hands out a token; give up if it exits (the port was taken) or after 30 s.
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case err := <-exited:
			exited <- err
			out, _ := os.ReadFile(logPath)
			return nil, fmt.Errorf("exited (%v): %s", err, out)
		default:
		}
		if _, err := m.Token(); err == nil {
			break
		}
		if time.Now().After(deadline) {
			stop()
			out, _ := os.ReadFile(logPath)
			return nil, fmt.Errorf("no token from %s within 30s: %s", m.Endpoint, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Cleanup(stop)
	return m, nil
}

// Token asks for an IMDSv2 session token.
func (m *IMDS) Token() (string, error) {
	req, err := http.NewRequest(http.MethodPut, m.Endpoint+"/latest/api/token", nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("X-aws-ec2-metadata-token-ttl-seconds", "60")
	resp, err := (&http.Client{Timeout: 2 * time.Second}).Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK || len(b) == 0 {
		return "", fmt.Errorf("token: %s", resp.Status)
	}
	return string(b), nil
}

// toolsDir is the project's .tools folder (".tools" when the module root is unknown).
func toolsDir() string {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if mod := strings.TrimSpace(string(out)); err == nil && mod != "" && mod != os.DevNull {
		return filepath.Join(filepath.Dir(mod), ".tools")
	}
	return ".tools"
}

// findTool looks for a test tool in PATH, then in the project's .tools/ (where
// scripts/test-deps.sh installs it), then in $(go env GOBIN) and $(go env GOPATH)/bin.
func findTool(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	var dirs []string
	if out, err := exec.Command("go", "env", "GOMOD", "GOBIN", "GOPATH").Output(); err == nil {
		lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
		if len(lines) == 3 {
			if mod := strings.TrimSpace(lines[0]); mod != "" && mod != os.DevNull {
				dirs = append(dirs, filepath.Join(filepath.Dir(mod), ".tools"))
			}
			if gobin := strings.TrimSpace(lines[1]); gobin != "" {
				dirs = append(dirs, gobin)
			}
			for _, gp := range filepath.SplitList(strings.TrimSpace(lines[2])) {
				dirs = append(dirs, filepath.Join(gp, "bin"))
			}
		}
	}
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", errors.New(name + " not found")
}
