package systemdtest_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	debPath string // the .deb under test: $PCS_LIFECYCLE_DEB, or built once per test binary
	modRoot string // the module's folder
	workDir string // TestMain's scratch folder
)

func TestMain(m *testing.M) {
	os.Exit(mainWithCode(m))
}

func mainWithCode(m *testing.M) int {
	var err error
	workDir, err = os.MkdirTemp("", "pcs-systemdtest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "systemdtest:", err)
		return 1
	}
	defer os.RemoveAll(workDir)
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil || strings.TrimSpace(string(out)) == "" || strings.TrimSpace(string(out)) == os.DevNull {
		fmt.Fprintln(os.Stderr, "systemdtest: not inside the Go module:", err)
		return 1
	}
	modRoot = filepath.Dir(strings.TrimSpace(string(out)))
	// The package as `make package` makes it (nfpm), unless one is given.
	if debPath = os.Getenv("PCS_LIFECYCLE_DEB"); debPath == "" {
		start := time.Now()
		build := exec.Command("make", "-s", "package", "DIST="+filepath.Join(workDir, "dist"),
			"BIN="+filepath.Join(workDir, "bin", "pcs-lifecycle"), "GEN="+filepath.Join(workDir, "gen"))
		build.Dir = modRoot
		if out, err := build.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "systemdtest: make package failed (it needs make and Go; PCS_LIFECYCLE_DEB=FILE uses a .deb built already): %v\n%s", err, out)
			return 1
		}
		debPath = filepath.Join(workDir, "dist", "pcs-lifecycle.deb")
		fmt.Printf("systemdtest: make package: %s\n", time.Since(start).Round(time.Millisecond))
	}
	if _, err := os.Stat(debPath); err != nil {
		fmt.Fprintln(os.Stderr, "systemdtest: the .deb under test:", err)
		return 1
	}
	code := m.Run()
	printTimings()
	return code
}

// timings collects what the scenarios measured (container boots, the scenarios themselves),
// printed as a table at the end of the run: they go to the report, never into an assertion.
var timings struct {
	sync.Mutex
	rows []string
}

func record(t *testing.T, what string, d time.Duration) {
	t.Logf("timing: %s: %s", what, d.Round(time.Millisecond))
	timings.Lock()
	defer timings.Unlock()
	timings.rows = append(timings.rows, fmt.Sprintf("%-70s %10s", t.Name()+": "+what, d.Round(time.Millisecond)))
}

func printTimings() {
	timings.Lock()
	defer timings.Unlock()
	if len(timings.rows) == 0 {
		return
	}
	sort.Strings(timings.rows)
	fmt.Println("systemdtest timings:")
	for _, r := range timings.rows {
		fmt.Println("  " + r)
	}
}
