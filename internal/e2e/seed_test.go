package e2e_test

// The seed experiment: the node-lifecycle experiment PCS users run first, replayed on sandbox
// nodes with the three scripts it uses (one that records each run in a file outside the node,
// a Slurm readiness check, one that fails). Four nodes: the two execution policies over a first
// boot and a reboot served from the cache, then a failing script under STOP_SEQUENCE, TERMINATE
// and CONTINUE. Many other tests cover each rule more closely; this one keeps the experiment's
// whole story in one place, as a user would run it.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pcs-lifecycle/pcs-lifecycle/pkg/status"
)

// seed is the experiment's bucket with its three scripts, and the folder where the recording
// script appends one line per run, per node (<node>.txt).
type seed struct {
	bucket                  *s3Bucket
	records                 string
	recordBody              []byte
	recordBoot, check, fail string
}

func newSeed(t *testing.T) *seed {
	t.Helper()
	s := &seed{bucket: newBucket(t), records: t.TempDir()}
	// Scripts run in a clean environment, so the records folder is written into the script.
	s.recordBody = []byte(fmt.Sprintf(`#!/bin/bash
set -euo pipefail
label="${1:-unknown}"
echo "label=$label first_boot=${PCS_IS_FIRST_BOOT:-unset} node=${PCS_NODE_ID:-unset} group=${PCS_COMPUTE_NODE_GROUP_NAME:-unset}" >> %s/"$PCS_NODE_ID".txt
echo "recorded $label"
`, shellQuote(s.records)))
	s.recordBoot = s.bucket.put(t, "scripts/record-boot.sh", s.recordBody)
	s.check = s.bucket.put(t, "scripts/ready-check.sh", []byte(`#!/bin/bash
echo "ready-check on ${PCS_NODE_ID:-unset}"
if command -v scontrol >/dev/null; then scontrol show node "$PCS_NODE_ID" 2>&1 | head -3; fi
exit 0
`))
	s.fail = s.bucket.put(t, "scripts/fail.sh", []byte("#!/bin/bash\necho 'intentional failure for verification' >&2\nexit 1\n"))
	return s
}

// recorded is the lines the recording script wrote for node n (none when it never ran there).
func (s *seed) recorded(t *testing.T, n *node) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(s.records, n.name+".txt"))
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

func TestSeedExperiment(t *testing.T) {
	t.Parallel()
	s := newSeed(t)

	t.Run("policies over a first boot and a reboot", func(t *testing.T) {
		t.Parallel()
		n := newNode(t)
		// A copy of its own: it is removed from the bucket before the reboot.
		record := s.bucket.put(t, "scripts/policies/record-boot.sh", s.recordBody)
		cfg := n.writeConfig(stages(
			[]scriptDef{
				script("record-first-boot", record).args("bootstrapped-first-boot-only").firstOnly(),
				script("record-every-boot", record).args("bootstrapped-every-boot").every(),
			},
			[]scriptDef{script("ready-check", s.check).onErr("CONTINUE")}))

		n.requireRun(0, "run", "--stage", bootstrapped, "--config", cfg)
		mark := func(label, first string) string {
			return fmt.Sprintf("label=%s first_boot=%s node=%s group=%s", label, first, n.name, cngName)
		}
		require.Equal(t, []string{mark("bootstrapped-first-boot-only", "1"), mark("bootstrapped-every-boot", "1")}, s.recorded(t, n))

		// The per-script log: the start line with the arguments as JSON, the output, the end
		// line with the exit code, both stamped with Unix seconds.
		every := n.runs(bootstrapped, "record-every-boot")
		require.Len(t, every, 1)
		require.Regexp(t, regexp.MustCompile(`^\[start record-every-boot args=\["bootstrapped-every-boot"\] @ \d{10}\]$`), every[0].start)
		require.Equal(t, "recorded bootstrapped-every-boot\n", every[0].output)
		require.Regexp(t, regexp.MustCompile(`^\[end record-every-boot exit=0 @ \d{10}\]$`), every[0].end)
		require.NotEmpty(t, n.executorLog(), "executor.log is JSON lines (executorLog checks every line)")

		n.requireRun(0, "run", "--stage", ready)
		checkRuns := n.runs(ready, "ready-check")
		require.Len(t, checkRuns, 1)
		require.Equal(t, "0", checkRuns[0].exit)
		require.Contains(t, checkRuns[0].output, "ready-check on "+n.name)
		readyLog := n.scriptLog(ready, "ready-check")

		// CACHE_ONCE: the reboot runs from the cache, so the script may leave the bucket.
		s.bucket.remove(t, "scripts/policies/record-boot.sh")
		n.reboot()
		n.requireRun(0, "run", "--stage", bootstrapped)
		require.Equal(t, []string{
			mark("bootstrapped-first-boot-only", "1"), mark("bootstrapped-every-boot", "1"),
			mark("bootstrapped-every-boot", "0"),
		}, s.recorded(t, n), "on the reboot only EVERY_BOOT ran, with PCS_IS_FIRST_BOOT=0")
		require.Len(t, n.runs(bootstrapped, "record-every-boot"), 2)
		require.Len(t, n.runs(bootstrapped, "record-first-boot"), 1)
		n.requireLog("script", "record-every-boot", "message~", "cache")

		n.requireRun(0, "run", "--stage", ready)
		require.Equal(t, readyLog, n.scriptLog(ready, "ready-check"), "ready-check is FIRST_BOOT_ONLY by default")
	})

	t.Run("STOP_SEQUENCE", func(t *testing.T) {
		t.Parallel()
		n := newNode(t)
		cfg := n.writeConfig(stages(
			[]scriptDef{
				script("fail-stop-sequence", s.fail).onErr("STOP_SEQUENCE"),
				script("record-after-fail", s.recordBoot).args("after-fail"),
			},
			[]scriptDef{script("ready-check", s.check).onErr("CONTINUE")}))
		n.requireRun(3, "run", "--stage", bootstrapped, "--config", cfg)
		failed := n.runs(bootstrapped, "fail-stop-sequence")
		require.Len(t, failed, 1)
		require.Equal(t, "intentional failure for verification\n", failed[0].output)
		require.Equal(t, "1", failed[0].exit)
		require.Empty(t, s.recorded(t, n), "the rest of the stage did not run")
		n.requireLog("level", "ERROR", "script", "fail-stop-sequence", "on_error", "*")

		n.requireRun(0, "run", "--stage", ready)
		require.Len(t, n.runs(ready, "ready-check"), 1, "the next stage still runs")
	})

	t.Run("TERMINATE", func(t *testing.T) {
		t.Parallel()
		n := newNode(t)
		cfg := n.writeConfig(stages(
			[]scriptDef{
				script("fail-terminate", s.fail), // TERMINATE is the default onError
				script("record-after-fail", s.recordBoot).args("after-fail"),
			},
			[]scriptDef{script("ready-check", s.check).onErr("CONTINUE")}))
		n.requireRun(4, "run", "--stage", bootstrapped, "--config", cfg)
		require.Empty(t, s.recorded(t, n), "the rest of the stage did not run")
		n.requireRun(4, "run", "--stage", ready)
		require.Empty(t, n.scriptLog(ready, "ready-check"), "nothing more runs on a terminated node")
	})

	t.Run("CONTINUE", func(t *testing.T) {
		t.Parallel()
		n := newNode(t)
		cfg := n.writeConfig(stages(
			[]scriptDef{
				script("fail-continue", s.fail).onErr("CONTINUE"),
				script("record-after-fail", s.recordBoot).args("after-fail"),
			}, nil))
		n.requireRun(3, "run", "--stage", bootstrapped, "--config", cfg)
		require.Equal(t, []string{fmt.Sprintf("label=after-fail first_boot=1 node=%s group=%s", n.name, cngName)}, s.recorded(t, n))

		r := n.run("status", "--json")
		require.Equal(t, 3, r.code, "status exits with the boot's worst result:\n%s", r)
		var d status.Document
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &d), "status --json:\n%s", r)
		sc := scriptOf(t, &d, bootstrapped, "fail-continue")
		require.Equal(t, "failed", sc.ThisBoot)
		require.NotNil(t, sc.ExitCode)
		require.Equal(t, 1, *sc.ExitCode)
	})
}
