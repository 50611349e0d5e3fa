package e2e_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pcs-lifecycle/pcs-lifecycle/pkg/status"
)

// requireFits: every line of a terminal output within 100 columns, none ending in a space.
func requireFits(t testing.TB, out string) {
	t.Helper()
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		require.LessOrEqual(t, len([]rune(l)), 100, "line %q of\n%s", l, out)
		require.Equal(t, strings.TrimRight(l, " "), l, "trailing space in %q", l)
	}
}

// badDocument breaks one rule per field, each in a different place.
const badDocument = `{
  "scriptCachingPolicy": "CACHE_SOMETIMES",
  "stages": {
    "nodeBootstrapped": [
      {"name": "ok-script", "scriptSource": {"scriptLocation": "s3://bucket-ok/ok.sh"}},
      {"name": "bad name!", "scriptSource": {"scriptLocation": "http://insecure.example.com/x.sh"}},
      {"name": "typo", "scriptSource": {"scriptLocation": "s3://bucket-ok/t.sh", "checksum": "abc"},
       "executionPolicies": "EVERY_BOOT"},
      {"name": "ok-script", "scriptSource": {"scriptLocation": "https://example.com/s.sh", "s3VersionId": "v1"},
       "onError": "IGNORE"}
    ],
    "nodeReady": [
      {"name": "long-arg", "scriptSource": {"scriptLocation": "s3://bucket-ok/l.sh"},
       "arguments": ["fine", "` + "LONG" + `"], "executionPolicy": "SOMETIMES"}
    ],
    "nodeStarted": []
  }
}`

var badDocumentPaths = []string{
	"scriptCachingPolicy: ",
	"stages.nodeBootstrapped[1].name: ",
	"stages.nodeBootstrapped[1].scriptSource.scriptLocation: ",
	"stages.nodeBootstrapped[2].scriptSource.checksum: ",
	"stages.nodeBootstrapped[2].executionPolicies: unknown field",
	"stages.nodeBootstrapped[3].name: duplicate",
	"stages.nodeBootstrapped[3].scriptSource.s3VersionId: ",
	"stages.nodeBootstrapped[3].onError: ",
	"stages.nodeReady[0].arguments[1]: longer than 256 characters",
	"stages.nodeReady[0].executionPolicy: ",
	"stages.nodeStarted: unknown field",
}

func writeBadDocument(t testing.TB) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "bad.json")
	require.NoError(t, os.WriteFile(p, []byte(strings.Replace(badDocument, "LONG", strings.Repeat("a", 257), 1)), 0o644))
	return p
}

// TestValidate: validate reports every error once, with its JSON path, on stdout, and exits 2;
// a valid document (also wrapped, or as get-compute-node-group prints it) exits 0 and says
// which form it found. It reads the sources --config reads: a file, s3://, https:// and -.
func TestValidate(t *testing.T) {
	t.Parallel()
	w := newWeb(t)
	n := newNode(t, withCA(w))
	bad := writeBadDocument(t)
	r := n.runArgv([]string{"validate", bad})
	require.Equal(t, 2, r.code, "%s", r)
	for _, p := range badDocumentPaths {
		require.Equal(t, 1, strings.Count(r.stdout, p), "each error once: %q\n%s", p, r)
	}
	require.Len(t, regexp.MustCompile(`(?m)^error: `).FindAllString(r.stdout, -1), len(badDocumentPaths), "one line per error:\n%s", r)
	require.Empty(t, r.stderr, "the listing is the message; nothing is repeated on stderr")
	require.Contains(t, r.stdout, bad+": invalid (11 errors")

	notJSON := n.writeFile("not.json", []byte("{\"stages\": {\"nodeReady\": [\n  {\"name\": \"a\"},\n]}}"))
	r = n.runArgv([]string{"validate", notJSON})
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stdout, `error: $: invalid JSON: line 2, column 16: trailing comma before "]"`)

	good := stages([]scriptDef{script("a", "s3://bucket-ok/a.sh"), script("b", "https://127.0.0.1:8443/b.sh")}, nil)
	goodPath := n.writeConfig(good)
	r = n.runArgv([]string{"validate", goodPath})
	require.Equal(t, 0, r.code, "%s", r)
	require.Contains(t, r.stdout, goodPath+": read as a nodeLifecycleActions document")
	require.Contains(t, r.stdout, "valid (2 scripts, CACHE_ONCE, ")
	require.Contains(t, r.stdout, "warning: stages.nodeBootstrapped[0].scriptSource: not verified: no checksum; with onError TERMINATE")

	wrapped := n.writeFile("wrapped.json", []byte(`{"nodeLifecycleActions": `+string(good.json(t))+`}`))
	r = n.runArgv([]string{"validate", wrapped})
	require.Equal(t, 0, r.code, "%s", r)
	require.Contains(t, r.stdout, `read as a document wrapped as {"nodeLifecycleActions": {...}}`)

	r = n.runArgv([]string{"validate", "--api-strict", goodPath})
	require.Equal(t, 2, r.code, "--api-strict refuses an IP host:\n%s", r)
	require.Contains(t, r.stdout, "error: stages.nodeBootstrapped[1].scriptSource.scriptLocation: ")

	group := []byte(`{"computeNodeGroup": {"name": "c7i", "id": "pcs_abc", "status": "ACTIVE", "nodeLifecycleActions": ` + string(good.json(t)) + `}}`)
	t.Run("stdin", func(t *testing.T) {
		cmd := exec.Command(binPath, "validate", "-")
		cmd.Env = n.environ()
		cmd.Stdin = bytes.NewReader(group)
		out, err := cmd.Output()
		require.NoError(t, err, "%s", out)
		require.Contains(t, string(out), "standard input: read as the output of aws pcs get-compute-node-group")
		require.Contains(t, string(out), "standard input: valid (2 scripts")
	})
	t.Run("https", func(t *testing.T) {
		loc := w.put("/pcs/group.json", group)
		r := n.with(t).runArgv([]string{"validate", loc})
		require.Equal(t, 0, r.code, "%s", r)
		require.Contains(t, r.stdout, loc+": valid (2 scripts")
		r = n.with(t).runArgv([]string{"validate", w.URL + "/pcs/missing.json"})
		require.Equal(t, 2, r.code, "%s", r)
		require.Contains(t, r.stderr, "/pcs/missing.json")
	})
	t.Run("s3", func(t *testing.T) {
		b := newBucket(t)
		loc := b.put(t, "pcs/bad.json", []byte(strings.Replace(badDocument, "LONG", strings.Repeat("a", 257), 1)))
		r := n.with(t).runArgv([]string{"validate", loc})
		require.Equal(t, 2, r.code, "%s", r)
		require.Contains(t, r.stdout, "error: stages.nodeReady[0].arguments[1]: longer than 256 characters (it has 257)")
	})
}

// TestRunInvalidConfig: run with an invalid configuration exits 2, lists the errors, and runs,
// downloads and caches nothing.
func TestRunInvalidConfig(t *testing.T) {
	t.Parallel()
	w := newWeb(t)
	n := newNode(t, withCA(w))
	loc := w.put("/never.sh", okScript("never"))
	d := string(stages([]scriptDef{script("never", loc)}, nil).json(t))
	d = strings.Replace(d, `"name": "never"`, `"name": "never", "onError": "RETRY"`, 1)
	cfg := n.writeFile("invalid.json", []byte(d))
	r := n.requireRun(2, "run", "--stage", bootstrapped, "--config", cfg)
	require.Contains(t, r.stderr, "stages.nodeBootstrapped[0].onError: ")
	require.Zero(t, w.total.Load(), "nothing is downloaded")
	require.NoDirExists(t, filepath.Join(n.logDir(), bootstrapped))
	require.NoFileExists(t, n.cachedConfig())
	require.Empty(t, n.cachedFiles())
	n.requireLog("level", "ERROR", "message~", "invalid configuration")

	r = n.requireRun(2, "run", "--stage", bootstrapped, "--config", writeBadDocument(t))
	for _, p := range badDocumentPaths {
		require.Contains(t, r.stderr, p)
	}
	require.NoFileExists(t, n.cachedConfig())
}

// TestUsageErrors: bad usage exits 2.
func TestUsageErrors(t *testing.T) {
	t.Parallel()
	n := newNode(t)
	cfg := n.writeConfig(stages([]scriptDef{script("a", "s3://bucket-ok/a.sh")}, nil))
	cases := []struct {
		name string
		argv []string
		msg  string
	}{
		{"unknown flag", n.argv("run", "--stage", bootstrapped, "--bogus-flag"), "unknown flag"},
		{"bogus stage", n.argv("run", "--stage", "bogus", "--config", cfg), "bogus"},
		{"no stage", n.argv("run", "--config", cfg), "stage"},
		{"unknown command", []string{"reboot-the-world"}, "unknown command"},
		{"validate without a file", []string{"validate"}, "arg"},
		{"bad log level", n.argv("run", "--stage", bootstrapped, "--config", cfg, "--log-level", "loud"), "log-level"},
		{"no download attempts", n.argv("run", "--stage", bootstrapped, "--config", cfg, "--download-attempts", "0"), "download-attempts"},
		{"negative timeout", n.argv("run", "--stage", bootstrapped, "--config", cfg, "--script-timeout", "-1s"), "negative"},
		{"flag before the command", append([]string{"--root", n.root, "--bogus-flag"}, "status"), "unknown flag"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := n.with(t).runArgv(tc.argv)
			require.Equal(t, 2, r.code, "%s", r)
			require.Contains(t, r.stderr, tc.msg)
		})
	}
	require.NoDirExists(t, filepath.Join(n.logDir(), bootstrapped), "nothing ran")
}

// planLine is one line of plan.
type planLine struct {
	verb, script, policy, reason, cache string
}

// planVerdicts: plan's first column (SPEC §7: run or skip) against the state it shows.
var planVerdicts = map[string]string{"pending": "run"}

func parsePlan(t testing.TB, out string) map[string]planLine {
	t.Helper()
	m := map[string]planLine{}
	sep := regexp.MustCompile(`\s{2,}`)
	for i, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if i == 0 {
			require.Equal(t, []string{"PLAN", "STATE", "SCRIPT", "POLICY", "CACHE", "WHY"}, sep.Split(l, -1), "plan --wide heading")
			continue
		}
		f := sep.Split(strings.TrimSpace(l), -1)
		require.Len(t, f, 6, "plan line %q", l)
		want := planVerdicts[f[1]]
		if want == "" {
			want = "skip"
		}
		require.Equal(t, want, f[0], "plan line %q: run or skip", l)
		f = f[1:]
		p := planLine{verb: f[0], script: f[1], policy: f[2], reason: f[4], cache: f[3]}
		if p.cache == "-" {
			p.cache = ""
		}
		require.Contains(t, status.ScriptStates, p.verb, "plan line %q", l)
		m[p.script] = p
	}
	return m
}

// TestPlan: plan and plan --reboot say, for the seed document, what runs and why, running
// nothing; what they say is what run then does.
func TestPlan(t *testing.T) {
	t.Parallel()
	b := newBucket(t)
	loc := b.put(t, "scripts/record-boot.sh", bootScript())
	rc := b.put(t, "scripts/ready-check.sh", okScript("ready"))
	seed := stages(
		[]scriptDef{
			script("record-first-boot", loc).args("bootstrapped-first-boot-only").firstOnly(),
			script("record-every-boot", loc).args("bootstrapped-every-boot").every(),
		},
		[]scriptDef{script("ready-check", rc).onErr("CONTINUE")})

	t.Run("first boot, then reboot", func(t *testing.T) {
		t.Parallel()
		n := newNode(t)
		cfg := n.writeConfig(seed)
		r := n.requireRun(0, "plan", "--wide", "--config", cfg)
		p := parsePlan(t, r.stdout)
		require.Len(t, p, 3)
		for _, s := range []string{"nodeBootstrapped/record-first-boot", "nodeBootstrapped/record-every-boot", "nodeReady/ready-check"} {
			require.Equal(t, "pending", p[s].verb, s)
			require.Equal(t, "download: not in the cache", p[s].cache, s)
		}
		require.Equal(t, "first boot", p["nodeBootstrapped/record-first-boot"].reason)
		require.Equal(t, "FIRST_BOOT_ONLY", p["nodeBootstrapped/record-first-boot"].policy)
		require.Equal(t, "EVERY_BOOT", p["nodeBootstrapped/record-every-boot"].policy)
		require.Equal(t, "first boot", p["nodeReady/ready-check"].reason)
		require.NoDirExists(t, filepath.Join(n.logDir(), bootstrapped), "plan runs nothing")
		require.NoFileExists(t, n.cachedConfig(), "plan caches nothing")

		n.requireRun(0, "run", "--stage", bootstrapped, "--config", cfg)
		p = parsePlan(t, n.requireRun(0, "plan", "--wide").stdout)
		require.Equal(t, "succeeded", p["nodeBootstrapped/record-every-boot"].verb)
		require.Contains(t, p["nodeBootstrapped/record-every-boot"].reason, "already ran this boot")
		require.Equal(t, "pending", p["nodeReady/ready-check"].verb)
		require.Equal(t, "cache: downloaded this boot", p["nodeReady/ready-check"].cache)
		n.requireRun(0, "run", "--stage", ready)

		p = parsePlan(t, n.requireRun(0, "plan", "--wide", "--reboot").stdout)
		require.Equal(t, planLine{"skipped", "nodeBootstrapped/record-first-boot", "FIRST_BOOT_ONLY", "FIRST_BOOT_ONLY and this is not the first boot", ""},
			p["nodeBootstrapped/record-first-boot"])
		require.Equal(t, planLine{"pending", "nodeBootstrapped/record-every-boot", "EVERY_BOOT", "EVERY_BOOT", "cache: cached (CACHE_ONCE)"},
			p["nodeBootstrapped/record-every-boot"])
		require.Equal(t, "skipped", p["nodeReady/ready-check"].verb)

		requireFits(t, n.requireRun(0, "plan", "--reboot").stdout)
		requireFits(t, n.requireRun(0, "status").stdout)

		// The reboot does what was planned.
		n.reboot()
		p2 := parsePlan(t, n.requireRun(0, "plan", "--wide").stdout)
		require.Equal(t, p, p2)
		n.requireRun(0, "run", "--stage", bootstrapped)
		n.requireRun(0, "run", "--stage", ready)
		require.Len(t, n.runs(bootstrapped, "record-first-boot"), 1)
		require.Len(t, n.runs(bootstrapped, "record-every-boot"), 2)
		require.Len(t, n.runs(ready, "ready-check"), 1)
	})

	// Before the first boot, --reboot plans the boot after it: CACHE_ONCE scripts will be in
	// the cache by then.
	t.Run("reboot planned before the first boot", func(t *testing.T) {
		t.Parallel()
		n := newNode(t)
		p := parsePlan(t, n.requireRun(0, "plan", "--wide", "--reboot", "--config", n.writeConfig(seed)).stdout)
		require.Equal(t, "skipped", p["nodeBootstrapped/record-first-boot"].verb)
		require.Equal(t, "pending", p["nodeBootstrapped/record-every-boot"].verb)
		require.Equal(t, "cache: cached (CACHE_ONCE)", p["nodeBootstrapped/record-every-boot"].cache)
	})

	// --config names a file, an s3:// or an https:// document (SPEC §3), for plan as for run.
	t.Run("remote --config", func(t *testing.T) {
		t.Parallel()
		n := newNode(t)
		cfg := b.put(t, "plan-config.json", seed.json(t))
		r := n.requireRun(0, "plan", "--wide", "--config", cfg)
		require.Len(t, parsePlan(t, r.stdout), 3)
	})
}

// TestVersion: version prints the version and commit it was built with and the Go version.
func TestVersion(t *testing.T) {
	t.Parallel()
	n := newNode(t)
	r := n.runArgv([]string{"version"})
	require.Equal(t, 0, r.code, "%s", r)
	require.Equal(t, "pcs-lifecycle "+testVersion+" (commit "+testCommit+", "+runtime.Version()+")\n", r.stdout)
}

// TestStatusExitCode: status exits with the worst result of the current boot, and says so.
func TestStatusExitCode(t *testing.T) {
	t.Parallel()
	b := newBucket(t)
	n := newNode(t)
	cfg := n.writeConfig(stages(
		[]scriptDef{script("boot-ok", b.put(t, "ok.sh", okScript("ok"))).every()},
		[]scriptDef{script("ready-fails", b.put(t, "fail.sh", failScript(5))).onErr("CONTINUE")}))

	check := func(want int) {
		t.Helper()
		st, code := n.status()
		require.Equal(t, want, code)
		require.Equal(t, want, st.ExitCode)
		txt := n.run("status")
		require.Equal(t, want, txt.code)
		require.Contains(t, txt.stdout, "\nexit "+strconv.Itoa(want)+": ", "%s", txt.stdout)
		requireFits(t, txt.stdout)
	}
	// Nothing ran on this node: exit 5, in words.
	check(5)
	require.Contains(t, n.run("status").stdout, "exit 5: pcs-lifecycle never ran on this instance")
	n.requireRun(0, "run", "--stage", bootstrapped, "--config", cfg)
	check(0)
	n.requireRun(3, "run", "--stage", ready)
	check(3)
	st, _ := n.status()
	sc := scriptOf(t, st, ready, "ready-fails")
	require.Equal(t, "failed", sc.LastResult)
	require.Equal(t, 5, *sc.ExitCode)
	require.Equal(t, "FIRST_BOOT_ONLY", sc.ExecutionPolicy)
	require.Equal(t, "CONTINUE", sc.OnError)
	require.NotNil(t, sc.StartedAt)
	require.NotNil(t, sc.DurationMS)
	require.Equal(t, "failed", stageOf(t, st, ready).Status)
	require.Equal(t, n.instance, st.Node.InstanceID)
	require.Equal(t, 3, *stageOf(t, st, ready).ExitCode)

	n.reboot()
	check(5) // last boot's failure is not this boot's, and nothing ran on this one yet
	require.Contains(t, n.run("status").stdout, "exit 5: nothing has run on this boot")
	n.requireRun(0, "run", "--stage", bootstrapped)
	n.requireRun(0, "run", "--stage", ready)
	check(0)
	st, _ = n.status()
	require.Equal(t, "skipped", scriptOf(t, st, ready, "ready-fails").ThisBoot)
	require.Equal(t, "failed", scriptOf(t, st, ready, "ready-fails").LastResult, "the last execution is still shown")
}

// TestStatusNamesNode: status shows the node (SPEC §7: "the node and boot"): its Slurm name as
// given by --node-id, its instance and boot.
func TestStatusNamesNode(t *testing.T) {
	t.Parallel()
	b := newBucket(t)
	n := newNode(t)
	n.requireRun(0, "run", "--stage", bootstrapped, "--config",
		n.writeConfig(stages([]scriptDef{script("ok", b.put(t, "ok.sh", okScript("ok")))}, nil)))
	st, _ := n.status()
	require.Equal(t, n.instance, st.Node.InstanceID)
	require.Equal(t, n.bootID(), st.Node.BootID)
	require.Equal(t, n.name, st.Node.NodeID, "node_id of status --json")
}

// TestLogLayout: per-script logs sit at <stage>/<name>.log (spaces kept) in 0750 folders as 0640
// files, appended on every run and framed as SPEC §6 shows; executor.log is JSON lines.
func TestLogLayout(t *testing.T) {
	t.Parallel()
	b := newBucket(t)
	n := newNode(t)
	cfg := n.writeConfig(stages(
		[]scriptDef{script("record-every-boot", b.put(t, "rec.sh", sh(`echo "recorded $1"`))).every().args("bootstrapped-every-boot")},
		[]scriptDef{script("Join Slurm partition", b.put(t, "join.sh", okScript("joined"))).every()}))
	t0 := time.Now().Unix()
	n.requireRun(0, "run", "--stage", bootstrapped, "--config", cfg)
	n.requireRun(0, "run", "--stage", ready)
	n.reboot()
	n.requireRun(0, "run", "--stage", bootstrapped)
	t1 := time.Now().Unix()

	for _, d := range []string{n.logDir(), filepath.Join(n.logDir(), bootstrapped), filepath.Join(n.logDir(), ready)} {
		require.Equal(t, os.FileMode(0o750), modeOf(t, d), d)
	}
	for _, f := range []string{n.scriptLogPath(bootstrapped, "record-every-boot"), n.scriptLogPath(ready, "Join Slurm partition"),
		filepath.Join(n.logDir(), "executor.log")} {
		require.Equal(t, os.FileMode(0o640), modeOf(t, f), f)
	}
	log := n.scriptLog(bootstrapped, "record-every-boot")
	frame := regexp.MustCompile(`^\[start record-every-boot args=\["bootstrapped-every-boot"\] @ (\d{10})\]\nrecorded bootstrapped-every-boot\n\[end record-every-boot exit=0 @ (\d{10})\]\n$`)
	rs := runs(t, log, "record-every-boot")
	require.Len(t, rs, 2, "appended on every run")
	parts := strings.Split(log, "[start ")
	require.Len(t, parts, 3)
	for _, p := range parts[1:] {
		m := frame.FindStringSubmatch("[start " + p)
		require.NotNil(t, m, "frame %q", p)
		for _, ts := range m[1:] {
			s, _ := strconv.ParseInt(ts, 10, 64)
			require.True(t, s >= t0 && s <= t1, "@ is Unix seconds of the run")
		}
	}
	join := n.runs(ready, "Join Slurm partition")
	require.Len(t, join, 1)
	require.Equal(t, `[start Join Slurm partition args=[] @ `, join[0].start[:len(`[start Join Slurm partition args=[] @ `)])

	lines := n.executorLog()
	require.NotEmpty(t, lines)
	for _, want := range [][]string{
		{"message", "Downloaded script", "script", "record-every-boot"},
		{"message", "starting script", "script", "record-every-boot", "stage", bootstrapped},
		{"message", "script completed", "script", "record-every-boot", "exit_code", "0", "duration_ms", "*"},
		{"message", "Reusing cached script (CACHE_ONCE)", "script", "record-every-boot"},
		{"message", "stage finished", "stage", ready, "exit_code", "0"},
	} {
		n.requireLog(want...)
	}
}
