package reliability

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/pcs-lifecycle/pcs-lifecycle/pkg/lifecycle"
)

// mustHold fails the test with the bug a broken property would be.
func mustHold(t *testing.T, ok bool, bug string) {
	t.Helper()
	if !ok {
		t.Errorf("%s", bug)
	}
}

// mountTmpfs mounts a tmpfs of size at dir (created) for the rest of the test.
func mountTmpfs(t *testing.T, dir, size string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	opts := fmt.Sprintf("size=%s,mode=%04o", size, mode)
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		t.Fatalf("mount a %s tmpfs at %s: %v — the full-disk tests need root with CAP_SYS_ADMIN (run them as root, "+
			"or in a container started with --privileged or --cap-add SYS_ADMIN)", size, dir, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
}

// fill writes zeros to dir/filler until the file system is full and returns the filler.
func fill(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "filler")
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatalf("filler: %v", err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling %s: %v", dir, err)
			}
			// One more byte-sized write may still fit in a partly used page: fill it too.
			for {
				if _, err := f.Write(buf[:1]); err != nil {
					return p
				}
			}
		}
	}
}

const noSpace = "no space left on device"

// TestFullDiskState: the state directory on a tiny, full file system. A run exits 1 with an
// error naming the device's state, status still reads the state written before, nothing half
// written is left, and once there is room again the boot goes on where it stopped.
func TestFullDiskState(t *testing.T) {
	t.Parallel()
	t.Run("full-before-the-run", func(t *testing.T) {
		t.Parallel()
		n := newNode(t, "fullstate")
		mountTmpfs(t, n.layout.StateDir(), "64k", 0o700)
		marker := filepath.Join(n.work, "markers")
		srv, bucket := s3Scripts(t, map[string][]byte{"m.sh": markerScript(marker, "")})
		n.useS3(srv.Endpoint)
		cfg := n.writeConfig(document(lifecycle.CacheOnce, []lifecycle.Script{
			script("every", "s3://"+bucket+"/m.sh", lifecycle.EveryBoot, lifecycle.Terminate)}, nil))
		if r := n.run("run", "--stage", "nodeBootstrapped", "--config", cfg); r.code != 0 {
			t.Fatalf("first boot: %s", r)
		}
		filler := fill(t, n.layout.StateDir())
		n.reboot()
		r := n.run("run", "--stage", "nodeBootstrapped")
		if r.code != 1 || !strings.Contains(r.stderr, noSpace) || !strings.Contains(r.stderr, "state") {
			t.Fatalf("state on a full disk: want exit 1 and a message naming the state and the full disk: %s", r)
		}
		if got := readMarkers(marker).starts["every"]; got != 1 {
			t.Errorf("a script ran although its start could not be recorded: %d runs", got)
		}
		d := n.status()
		if sc := findScript(t, d, "nodeBootstrapped", "every"); sc.LastResult != "succeeded" || sc.Runs != 1 {
			t.Errorf("status after the failed run lost the first boot: %+v", sc)
		}
		if l := leftovers(t, n.layout.StateDir()); len(l) > 0 {
			t.Errorf("half-written files left: %v", l)
		}
		if err := os.Remove(filler); err != nil {
			t.Fatal(err)
		}
		if r := n.run("run", "--stage", "nodeBootstrapped"); r.code != 0 {
			t.Fatalf("with room again: %s", r)
		}
		if got := readMarkers(marker).starts["every"]; got != 2 {
			t.Errorf("EVERY_BOOT ran %d times in two boots", got)
		}
		report(t, "full-disk-state-before", map[string]any{"exit": r.code})
	})
	t.Run("fills-during-the-run", func(t *testing.T) {
		t.Parallel()
		n := newNode(t, "fullstate2")
		stateDir := n.layout.StateDir()
		mountTmpfs(t, stateDir, "64k", 0o700)
		marker := filepath.Join(n.work, "markers")
		// The script fills the state's file system (anything else on it could).
		filler := filepath.Join(stateDir, "filler")
		hog := markerScript(marker, "dd if=/dev/zero of="+shellQuote(filler)+" bs=1k 2>/dev/null; true")
		srv, bucket := s3Scripts(t, map[string][]byte{"hog.sh": hog, "m.sh": markerScript(marker, "")})
		n.useS3(srv.Endpoint)
		cfg := n.writeConfig(document(lifecycle.CacheOnce, []lifecycle.Script{
			script("hog", "s3://"+bucket+"/hog.sh", lifecycle.FirstBootOnly, lifecycle.Terminate),
			script("after", "s3://"+bucket+"/m.sh", lifecycle.FirstBootOnly, lifecycle.Terminate),
		}, nil))
		r := n.run("run", "--stage", "nodeBootstrapped", "--config", cfg)
		if r.code != 1 || !strings.Contains(r.stderr, noSpace) {
			t.Fatalf("state filled during the run: want exit 1 naming the full disk: %s", r)
		}
		d := n.status()
		if d.Running || findStage(d, "nodeBootstrapped").Status == "succeeded" {
			t.Errorf("status after a run cut short by a full disk: %+v", d)
		}
		if l := leftovers(t, stateDir); len(l) > 0 {
			t.Errorf("half-written files left: %v", l)
		}
		if err := os.Remove(filler); err != nil {
			t.Fatal(err)
		}
		r2 := n.run("run", "--stage", "nodeBootstrapped")
		if r2.code != 0 {
			t.Fatalf("with room again the stage resumes: %s", r2)
		}
		m := readMarkers(marker)
		if m.ends["after"] != 1 {
			t.Errorf("the script after the full disk ran %d times, want 1", m.ends["after"])
		}
		// The hog's end either reached the journal (then it must not run again) or not (then
		// it counts as interrupted and runs again): never more than twice.
		if m.starts["hog"] > 2 {
			t.Errorf("hog ran %d times", m.starts["hog"])
		}
		if d := n.status(); d.ExitCode != 0 || findStage(d, "nodeBootstrapped").Status != "succeeded" {
			t.Errorf("status after the resumed stage: %+v", d)
		}
		report(t, "full-disk-state-during", map[string]any{"exit": r.code, "hog_runs": m.starts["hog"]})
	})
}

// TestFullDiskLogs: the log directory on a tiny file system. Full before the run: the
// executor cannot frame a script's log, so it runs nothing, exits 1 and says why; status still
// reads the state. Filled by the script's own output: the state records the script's real
// outcome and stderr names the full disk.
func TestFullDiskLogs(t *testing.T) {
	t.Parallel()
	t.Run("full-before-the-run", func(t *testing.T) {
		t.Parallel()
		n := newNode(t, "fulllog")
		mountTmpfs(t, n.layout.LogDir(), "64k", 0o750)
		fill(t, n.layout.LogDir())
		marker := filepath.Join(n.work, "markers")
		srv, bucket := s3Scripts(t, map[string][]byte{"m.sh": markerScript(marker, "")})
		n.useS3(srv.Endpoint)
		cfg := n.writeConfig(document(lifecycle.CacheOnce, []lifecycle.Script{
			script("logged", "s3://"+bucket+"/m.sh", lifecycle.FirstBootOnly, lifecycle.Terminate)}, nil))
		r := n.run("run", "--stage", "nodeBootstrapped", "--config", cfg)
		if r.code != 1 || !strings.Contains(r.stderr, noSpace) || !strings.Contains(r.stderr, "log") {
			t.Fatalf("logs on a full disk: want exit 1 naming the log and the full disk: %s", r)
		}
		if readMarkers(marker).starts["logged"] != 0 {
			t.Errorf("a script ran although its log could not be written")
		}
		d := n.status()
		if d.Running || findStage(d, "nodeBootstrapped").Status == "succeeded" {
			t.Errorf("status: %+v", d)
		}
		sc := findScript(t, d, "nodeBootstrapped", "logged")
		mustHold(t, sc.Runs == 0 && sc.LastResult != "running",
			fmt.Sprintf("stage.runScript journals the script as started (runs=%d, last=%q) before scriptlog.Start, so a script whose log cannot be opened is counted as a run that never happened", sc.Runs, sc.LastResult))
		report(t, "full-disk-logs-before", map[string]any{"exit": r.code})
	})
	t.Run("filled-by-the-script", func(t *testing.T) {
		t.Parallel()
		n := newNode(t, "fulllog2")
		mountTmpfs(t, n.layout.LogDir(), "1m", 0o750)
		flood := []byte("#!/bin/sh\nhead -c 4000000 /dev/zero | tr '\\0' x\necho\necho last line\n")
		srv, bucket := s3Scripts(t, map[string][]byte{"flood.sh": flood})
		n.useS3(srv.Endpoint)
		cfg := n.writeConfig(document(lifecycle.CacheOnce, []lifecycle.Script{
			script("flood", "s3://"+bucket+"/flood.sh", lifecycle.FirstBootOnly, lifecycle.Terminate)}, nil))
		r := n.run("run", "--stage", "nodeBootstrapped", "--config", cfg)
		if !strings.Contains(r.stderr, noSpace) {
			t.Errorf("stderr does not name the full disk: %s", r)
		}
		d := n.status()
		if sc := findScript(t, d, "nodeBootstrapped", "flood"); sc.LastResult != "succeeded" || sc.Runs != 1 {
			t.Errorf("the script's real outcome is not recorded: %+v", sc)
		}
		mustHold(t, r.code == 1, fmt.Sprintf("stage.runScript ignores proc.Result.OutputErr and only WARNs when the script log cannot be ended: a run whose log filled the disk must exit 1 (SPEC §7: 1 = disk), got %d", r.code))
		report(t, "full-disk-logs-during", map[string]any{"exit": r.code})
	})
}
