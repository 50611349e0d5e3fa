package e2e_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestArgumentsVerbatim: arguments reach the script as argv, byte for byte; nothing in them is
// run by a shell, with or without a "#!" line.
func TestArgumentsVerbatim(t *testing.T) {
	t.Parallel()
	b := newBucket(t)
	n := newNode(t)
	dir, err := os.MkdirTemp("", "e2e")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	marker := filepath.Join(dir, "x")
	args := []string{
		"plain",
		"two words",
		`it's "quoted" $(touch ` + marker + `); touch ` + marker + "; `touch " + marker + "` && echo pwned > " + marker,
		"",
		"--flag=<x>&y",
		"$HOME ${PATH} * ?",
		"tab\there",
	}
	body := `for a in "$@"; do printf '<%s>\n' "$a"; done` + "\necho argc=$#"
	cfg := n.writeConfig(stages([]scriptDef{
		script("with-shebang", b.put(t, "args.sh", sh(body))).args(args...),
		script("without-shebang", b.put(t, "args-nosb.sh", []byte(body+"\n"))).args(args...),
	}, nil))
	n.requireRun(0, "run", "--stage", bootstrapped, "--config", cfg)

	var want strings.Builder
	for _, a := range args {
		fmt.Fprintf(&want, "<%s>\n", a)
	}
	fmt.Fprintf(&want, "argc=%d\n", len(args))
	for _, name := range []string{"with-shebang", "without-shebang"} {
		rs := n.runs(bootstrapped, name)
		require.Len(t, rs, 1)
		require.Equal(t, want.String(), rs[0].output, name)
		var logged []string
		require.NoError(t, json.Unmarshal([]byte(rs[0].args), &logged), "args= is a JSON array: %s", rs[0].start)
		require.Equal(t, args, logged)
	}
	require.Less(t, len(args[2]), 257)
	require.NoFileExists(t, marker, "an argument was executed by a shell")
	l := n.requireLog("message", "starting script", "script", "with-shebang")
	require.Equal(t, fmt.Sprint(args), fmt.Sprint(l["arguments"]))
}

// TestNoShebang: a script without "#!" is run by /bin/sh.
func TestNoShebang(t *testing.T) {
	t.Parallel()
	b := newBucket(t)
	n := newNode(t)
	cfg := n.writeConfig(stages([]scriptDef{
		script("plain", b.put(t, "plain.sh", []byte("echo \"interpreter=$(readlink /proc/$$/exe)\"\necho \"first=$1\"\n"))).args("one"),
	}, nil))
	n.requireRun(0, "run", "--stage", bootstrapped, "--config", cfg)
	shell, err := filepath.EvalSymlinks("/bin/sh")
	require.NoError(t, err)
	rs := n.runs(bootstrapped, "plain")
	require.Len(t, rs, 1)
	require.Equal(t, shell, valueAfter(rs[0].output, "interpreter"))
	require.Equal(t, "one", valueAfter(rs[0].output, "first"))
	require.Equal(t, "0", rs[0].exit)
}

// parseEnv turns `env` output into a map, dropping what the shell itself adds.
func parseEnv(t testing.TB, out string) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		k, v, ok := strings.Cut(l, "=")
		require.True(t, ok, "env line %q", l)
		switch k {
		case "SHLVL", "_", "OLDPWD":
			continue
		}
		env[k] = v
	}
	return env
}

// TestScriptEnvironment: scripts get exactly the fixed environment plus the PCS variables
// (PCS_IS_FIRST_BOOT 1 on the first boot, 0 after) and the pass-through proxy and Slurm
// variables; nothing else of the executor's environment leaks in.
func TestScriptEnvironment(t *testing.T) {
	t.Parallel()
	b := newBucket(t)
	n := newNode(t,
		withEnv("SECRET_TEST_VAR", "must-not-leak"),
		withEnv("HTTPS_PROXY", "http://127.0.0.1:9"),
		withEnv("NO_PROXY", "internal.example"),
		withEnv("SLURM_CONF", "/etc/slurm/e2e.conf"),
		withEnv("SLURM_CONF_SERVER", "ctl.example:6817"),
		withEnv("http_proxy", "http://127.0.0.1:8"),
		withEnv("HOME", "/home/not-root"),
		withEnv("LANG", "fr_FR.ISO-8859-1"),
	)
	dump := b.put(t, "env.sh", sh("exec /usr/bin/env"))
	cfg := n.writeConfig(stages(
		[]scriptDef{script("env-dump", dump).every()},
		[]scriptDef{script("env-ready", dump).every()}))

	want := func(stage, name, first string) map[string]string {
		return map[string]string{
			"PATH":                        "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
			"HOME":                        "/root",
			"LANG":                        "C.UTF-8",
			"PWD":                         "/",
			"HTTPS_PROXY":                 "http://127.0.0.1:9",
			"NO_PROXY":                    "internal.example",
			"SLURM_CONF":                  "/etc/slurm/e2e.conf",
			"SLURM_CONF_SERVER":           "ctl.example:6817",
			"http_proxy":                  "http://127.0.0.1:8",
			"PCS_CLUSTER_ID":              clusterID,
			"PCS_CLUSTER_NAME":            clusterName,
			"PCS_COMPUTE_NODE_GROUP_ID":   cngID,
			"PCS_COMPUTE_NODE_GROUP_NAME": cngName,
			"PCS_NODE_ID":                 n.name,
			"PCS_IS_FIRST_BOOT":           first,
			"PCS_LIFECYCLE_STAGE":         stage,
			"PCS_LIFECYCLE_SCRIPT":        name,
			"PCS_INSTANCE_ID":             n.instance,
			"AWS_REGION":                  "us-east-1",
		}
	}
	n.requireRun(0, "run", "--stage", bootstrapped, "--config", cfg)
	n.requireRun(0, "run", "--stage", ready)
	n.reboot()
	n.requireRun(0, "run", "--stage", bootstrapped)
	n.requireRun(0, "run", "--stage", ready)

	for _, c := range []struct{ stage, name string }{{bootstrapped, "env-dump"}, {ready, "env-ready"}} {
		rs := n.runs(c.stage, c.name)
		require.Len(t, rs, 2)
		require.Equal(t, want(c.stage, c.name, "1"), parseEnv(t, rs[0].output), "first boot")
		require.Equal(t, want(c.stage, c.name, "0"), parseEnv(t, rs[1].output), "reboot")
	}
}

// TestIdentityFromEnvironment: the identity flags fall back to their PCS_* variables.
func TestIdentityFromEnvironment(t *testing.T) {
	t.Parallel()
	b := newBucket(t)
	n := newNode(t,
		withEnv("PCS_NODE_ID", "from-env-node"),
		withEnv("PCS_CLUSTER_ID", "pcs_fromenv"),
		withEnv("PCS_CLUSTER_NAME", "env-cluster"),
		withEnv("PCS_COMPUTE_NODE_GROUP_ID", "pcs_envcng"),
		withEnv("PCS_COMPUTE_NODE_GROUP_NAME", "env-cng"),
		withEnv("PCS_INSTANCE_ID", "i-0fromenv0000001"),
		withEnv("PCS_BOOT_ID", "env-boot-1"),
	)
	cfg := n.writeConfig(stages([]scriptDef{script("ids", b.put(t, "ids.sh", sh("env | grep ^PCS_ | sort")))}, nil))
	r := n.runArgv([]string{"run", "--root", n.root, "--stage", bootstrapped, "--config", cfg})
	require.Equal(t, 0, r.code, "%s", r)
	out := n.runs(bootstrapped, "ids")[0].output
	for _, kv := range []string{"PCS_NODE_ID=from-env-node", "PCS_CLUSTER_ID=pcs_fromenv", "PCS_CLUSTER_NAME=env-cluster",
		"PCS_COMPUTE_NODE_GROUP_ID=pcs_envcng", "PCS_COMPUTE_NODE_GROUP_NAME=env-cng", "PCS_INSTANCE_ID=i-0fromenv0000001",
		"PCS_IS_FIRST_BOOT=1"} {
		require.Contains(t, out, kv+"\n")
	}
	r = n.runArgv([]string{"status", "--root", n.root, "--json"})
	require.Equal(t, 0, r.code, "%s", r)
	require.Contains(t, r.stdout, `"boot_id": "env-boot-1"`)
	require.Contains(t, r.stdout, `"instance_id": "i-0fromenv0000001"`)
}

// TestProcessSetup: stdin is /dev/null, the working directory /, the umask 022 (even when the
// executor was started with another), and the script leads its own process group.
func TestProcessSetup(t *testing.T) {
	t.Parallel()
	b := newBucket(t)
	n := newNode(t)
	body := `echo "stdin=$(readlink /proc/$$/fd/0)"
echo "cwd=$(pwd)"
echo "umask=$(umask)"
echo "pid=$$"
echo "pgid=$(cut -d' ' -f5 /proc/$$/stat)"
echo "read=$(cat)"
f=$(mktemp -d)/f; : >"$f"; echo "filemode=$(stat -c %a "$f")"; rm -rf "$(dirname "$f")"`
	cfg := n.writeConfig(stages([]scriptDef{script("setup", b.put(t, "setup.sh", sh(body)))}, nil))
	argv := append([]string{"-c", `umask 077; exec "$0" "$@"`, binPath}, n.argv("run", "--stage", bootstrapped, "--config", cfg)...)
	r := n.runShell(argv)
	require.Equal(t, 0, r.code, "%s", r)
	out := n.runs(bootstrapped, "setup")[0].output
	require.Equal(t, "/dev/null", valueAfter(out, "stdin"))
	require.Equal(t, "/", valueAfter(out, "cwd"))
	require.Equal(t, "0022", valueAfter(out, "umask"))
	require.Equal(t, "644", valueAfter(out, "filemode"))
	require.Equal(t, "", valueAfter(out, "read"))
	require.Equal(t, valueAfter(out, "pid"), valueAfter(out, "pgid"), "the script leads its own process group")
}

// TestScriptResults: a non-zero exit and a death by signal are failures, framed in the log as
// exit=N and exit=signal:NAME, and reported in executor.log and status.
func TestScriptResults(t *testing.T) {
	t.Parallel()
	b := newBucket(t)
	cases := []struct {
		name, body, exit, signal string
		code                     *int
	}{
		{"exits-7", "echo before\nexit 7", "7", "", intp(7)},
		{"killed", "echo before\nkill -KILL $$\necho after", "signal:KILL", "KILL", nil},
		{"terminated", "echo before\nkill -TERM $$\necho after", "signal:TERM", "TERM", nil},
		{"succeeds", "echo before", "0", "", intp(0)},
	}
	n := newNode(t)
	var defs []scriptDef
	for _, c := range cases {
		defs = append(defs, script(c.name, b.put(t, c.name+".sh", sh(c.body))).onErr("CONTINUE"))
	}
	// A script that cannot be started at all (its interpreter is missing) fails too.
	defs = append(defs, script("bad-interpreter", b.put(t, "badint.sh", []byte("#!/nonexistent/interpreter\necho never\n"))).onErr("CONTINUE"))
	n.requireRun(3, "run", "--stage", bootstrapped, "--config", n.writeConfig(stages(defs, nil)))
	st, code := n.status()
	require.Equal(t, 3, code)
	for _, c := range cases {
		rs := n.runs(bootstrapped, c.name)
		require.Len(t, rs, 1, c.name)
		require.Equal(t, "before\n", rs[0].output, c.name)
		require.Equal(t, c.exit, rs[0].exit, c.name)
		sc := scriptOf(t, st, bootstrapped, c.name)
		require.Equal(t, c.signal, sc.Signal, c.name)
		if c.name == "succeeds" {
			require.Equal(t, "succeeded", sc.ThisBoot)
			f := n.requireLog("message", "script completed", "script", c.name, "status", "succeeded")
			require.Contains(t, f, "duration_ms")
			continue
		}
		require.Equal(t, "failed", sc.ThisBoot, c.name)
		e := n.requireLog("level", "ERROR", "script", c.name, "on_error", "Continue")
		if c.signal != "" {
			require.Equal(t, c.signal, e.str("signal"))
		} else {
			require.EqualValues(t, *c.code, e["exit_code"])
			require.Equal(t, *c.code, *sc.ExitCode)
		}
		f := n.requireLog("message", "script ended", "script", c.name, "status", "failed")
		require.Contains(t, f, "duration_ms")
		require.Empty(t, n.find("message", "script completed", "script", c.name), "a failure is never \"script completed\"")
	}
	bad := n.runs(bootstrapped, "bad-interpreter")
	require.Len(t, bad, 1)
	require.NotContains(t, bad[0].output, "never")
	require.NotEqual(t, "0", bad[0].exit)
	require.Equal(t, "failed", scriptOf(t, st, bootstrapped, "bad-interpreter").ThisBoot)
	n.requireLog("level", "ERROR", "script", "bad-interpreter", "on_error", "Continue")
	require.Contains(t, bad[0].output, `interpreter "/nonexistent/interpreter" named by its #! line does not exist`)
}

// TestCRLFScript: a script saved with Windows line ends names "/bin/sh\r" as its interpreter;
// the error names it and says why, in the script's log, the state and executor.log.
func TestCRLFScript(t *testing.T) {
	t.Parallel()
	b := newBucket(t)
	n := newNode(t)
	loc := b.put(t, "windows.sh", []byte("#!/bin/sh\r\necho never\r\n"))
	n.requireRun(3, "run", "--stage", bootstrapped, "--config", n.writeConfig(stages([]scriptDef{script("windows", loc).onErr("CONTINUE")}, nil)))
	rs := n.runs(bootstrapped, "windows")
	require.Len(t, rs, 1)
	const want = `interpreter "/bin/sh\r" named by its #! line does not exist: the script has CRLF (Windows) line ends`
	require.Contains(t, rs[0].output, want)
	st, _ := n.status()
	require.Contains(t, scriptOf(t, st, bootstrapped, "windows").Error, want)
	require.Contains(t, n.requireLog("level", "ERROR", "script", "windows").str("error"), want)
}

func intp(i int) *int { return &i }

// TestOutputInterleaved: stdout and stderr land in the log in the order written.
func TestOutputInterleaved(t *testing.T) {
	t.Parallel()
	b := newBucket(t)
	n := newNode(t)
	body := `for i in 1 2 3 4 5 6 7 8; do echo "out $i"; echo "err $i" >&2; done
printf 'no newline at the end' >&2`
	cfg := n.writeConfig(stages([]scriptDef{script("mixed", b.put(t, "mixed.sh", sh(body)))}, nil))
	n.requireRun(0, "run", "--stage", bootstrapped, "--config", cfg)
	var want strings.Builder
	for i := 1; i <= 8; i++ {
		fmt.Fprintf(&want, "out %d\nerr %d\n", i, i)
	}
	want.WriteString("no newline at the end\n")
	rs := n.runs(bootstrapped, "mixed")
	require.Len(t, rs, 1)
	require.Equal(t, want.String(), rs[0].output)
	require.Equal(t, "0", rs[0].exit)
}

// TestOutputTruncated: one run's output is capped at 16 MiB, then a truncation line; the
// script itself is not disturbed.
func TestOutputTruncated(t *testing.T) {
	t.Parallel()
	b := newBucket(t)
	n := newNode(t)
	const limit = 16 << 20
	line := strings.Repeat("0123456789abcdef", 4)[:63] // 64 bytes with its newline
	body := fmt.Sprintf("yes %s | head -c %d\necho flood-done-exit-0 >&2", line, 20<<20)
	cfg := n.writeConfig(stages([]scriptDef{script("flood", b.put(t, "flood.sh", sh(body)))}, nil))
	n.requireRun(0, "run", "--stage", bootstrapped, "--config", cfg)

	log := n.scriptLog(bootstrapped, "flood")
	require.Less(t, len(log), limit+4096, "the log stays about 16 MiB")
	require.Greater(t, len(log), limit)
	rs := runs(t, log, "flood")
	require.Len(t, rs, 1)
	require.Equal(t, "0", rs[0].exit)
	const note = "[output truncated after 16777216 bytes]\n"
	require.True(t, strings.HasSuffix(rs[0].output, note), "truncation line before the end line")
	kept := strings.TrimSuffix(rs[0].output, note)
	require.Len(t, kept, limit)
	require.Equal(t, strings.Repeat(line+"\n", limit/64), kept)
	require.NotContains(t, log, "flood-done-exit-0")
	w := n.requireLog("level", "WARN", "script", "flood", "message~", "truncated")
	require.Contains(t, w, "output_bytes")
	st, _ := n.status()
	require.Equal(t, "succeeded", scriptOf(t, st, bootstrapped, "flood").ThisBoot)
}

// TestBackgroundChildHoldsOutput: a script that leaves a background process holding its
// stdout does not keep the executor waiting.
func TestBackgroundChildHoldsOutput(t *testing.T) {
	t.Parallel()
	b := newBucket(t)
	n := newNode(t)
	body := "echo \"pgid=$$\"\nsleep 60 &\necho \"bg=$!\"\necho parent-done"
	cfg := n.writeConfig(stages([]scriptDef{
		script("daemonizes", b.put(t, "bg.sh", sh(body))),
		script("after", b.put(t, "after.sh", okScript("after-ran"))),
	}, nil))
	r := n.run("run", "--stage", bootstrapped, "--config", cfg)
	out := n.runs(bootstrapped, "daemonizes")[0].output
	if pg, err := strconv.Atoi(valueAfter(out, "pgid")); err == nil {
		t.Cleanup(func() { killGroup(pg) })
	}
	require.Equal(t, 0, r.code, "%s", r)
	bg, err := strconv.Atoi(valueAfter(out, "bg"))
	require.NoError(t, err, "%s", out)
	require.NoError(t, syscall.Kill(bg, 0), "the executor returned only after the background child (sleep 60) ended")
	require.Contains(t, out, "parent-done\n")
	require.Equal(t, "0", n.runs(bootstrapped, "daemonizes")[0].exit)
	require.Equal(t, "after-ran\n", n.runs(bootstrapped, "after")[0].output)
}

// hangScript prints its process group and hangs with a grandchild in the group, until release
// exists (checked at start).
func hangScript(release string) []byte {
	return sh(fmt.Sprintf(`echo "pgid=$$"
if [ -e %s ]; then echo released; exit 0; fi
sleep 60 &
echo waiting
wait`, release))
}

// pgidIn returns the pgid a hangScript printed in its log (0 when not yet).
func (n *node) pgidIn(stage, name string) int {
	rs := n.runs(stage, name)
	if len(rs) == 0 {
		return 0
	}
	pg, _ := strconv.Atoi(valueAfter(rs[len(rs)-1].output, "pgid"))
	return pg
}

// TestScriptTimeout: --script-timeout kills the script's whole process group and counts as a
// failure under its onError.
func TestScriptTimeout(t *testing.T) {
	t.Parallel()
	b := newBucket(t)
	n := newNode(t)
	cfg := n.writeConfig(stages([]scriptDef{
		script("hangs", b.put(t, "hang.sh", hangScript("/nonexistent"))).onErr("CONTINUE"),
		script("after", b.put(t, "after.sh", okScript("after-ran"))),
	}, nil))
	r := n.run("run", "--stage", bootstrapped, "--config", cfg, "--script-timeout", "500ms")
	pg := n.pgidIn(bootstrapped, "hangs")
	require.NotZero(t, pg)
	t.Cleanup(func() { killGroup(pg) })
	require.Equal(t, 3, r.code, "%s", r)
	require.False(t, groupAlive(pg), "the script's process group must be gone")
	rs := n.runs(bootstrapped, "hangs")
	require.Equal(t, "signal:TERM", rs[0].exit)
	require.Equal(t, "after-ran\n", n.runs(bootstrapped, "after")[0].output)
	st, _ := n.status()
	sc := scriptOf(t, st, bootstrapped, "hangs")
	require.Equal(t, "failed", sc.ThisBoot)
	require.Contains(t, sc.Error, "timeout")
	n.requireLog("level", "ERROR", "script", "hangs", "on_error", "Continue", "error~", "timeout")
}

// TestStageTimeout: --stage-timeout kills the running script's group, counts it as failed, and
// no later script of the stage runs.
func TestStageTimeout(t *testing.T) {
	t.Parallel()
	b := newBucket(t)
	n := newNode(t)
	cfg := n.writeConfig(stages([]scriptDef{
		script("quick", b.put(t, "quick.sh", okScript("quick-ran"))),
		script("hangs", b.put(t, "hang.sh", hangScript("/nonexistent"))).onErr("CONTINUE"),
		script("later", b.put(t, "later.sh", okScript("later-ran"))),
	}, nil))
	r := n.run("run", "--stage", bootstrapped, "--config", cfg, "--stage-timeout", "1s")
	pg := n.pgidIn(bootstrapped, "hangs")
	require.NotZero(t, pg)
	t.Cleanup(func() { killGroup(pg) })
	require.Equal(t, 3, r.code, "%s", r)
	require.False(t, groupAlive(pg), "the script's process group must be gone")
	require.Equal(t, "signal:TERM", n.runs(bootstrapped, "hangs")[0].exit)
	require.Empty(t, n.scriptLog(bootstrapped, "later"), "no script runs after the stage timeout")
	st, code := n.status()
	require.Equal(t, 3, code)
	require.Equal(t, "failed", stageOf(t, st, bootstrapped).Status)
	require.Equal(t, "succeeded", scriptOf(t, st, bootstrapped, "quick").ThisBoot)
	require.Equal(t, "failed", scriptOf(t, st, bootstrapped, "hangs").ThisBoot)
	later := scriptOf(t, st, bootstrapped, "later")
	require.Equal(t, "not_run", later.ThisBoot)
	require.Contains(t, later.Reason, "stage timeout")
	n.requireLog("script", "later", "message", "skipping script", "reason~", "stage timeout")
}

// TestSIGTERMInterruptsAndResumes: SIGTERM (SIGINT) to the executor stops the running script's group,
// records the stage as interrupted, exits 143 (130); running the stage again in the same boot
// resumes it: what finished is not run again, the interrupted script is.
func TestSIGTERMInterruptsAndResumes(t *testing.T) {
	t.Parallel()
	for _, sig := range []struct {
		name string
		sig  syscall.Signal
		code int
	}{{"SIGTERM", syscall.SIGTERM, 143}, {"SIGINT", syscall.SIGINT, 130}} {
		t.Run(sig.name, func(t *testing.T) {
			t.Parallel()
			testInterruptAndResume(t, sig.sig, sig.code)
		})
	}
}

func testInterruptAndResume(t *testing.T, sig syscall.Signal, exitCode int) {
	b := newBucket(t)
	n := newNode(t)
	release := filepath.Join(t.TempDir(), "release")
	cfg := n.writeConfig(stages([]scriptDef{
		script("first", b.put(t, "first.sh", okScript("first-ran"))),
		script("slow", b.put(t, "slow.sh", hangScript(release))).onErr("CONTINUE"),
		script("third", b.put(t, "third.sh", okScript("third-ran"))),
	}, nil))
	p := n.start("run", "--stage", bootstrapped, "--config", cfg)
	eventually(t, 20*time.Second, "slow to start", func() bool {
		rs := n.runs(bootstrapped, "slow")
		return len(rs) == 1 && strings.Contains(rs[0].output, "waiting\n")
	})
	pg := n.pgidIn(bootstrapped, "slow")
	require.NotZero(t, pg)
	t.Cleanup(func() { killGroup(pg) })

	require.NoError(t, p.cmd.Process.Signal(sig))
	r := p.wait(t, 20*time.Second)
	require.Equal(t, exitCode, r.code, "%s", r)
	require.Contains(t, r.stderr, "interrupted")
	require.Equal(t, 1, strings.Count(r.stderr, "interrupted ("), "said once on stderr: %s", r.stderr)
	n.requireLog("level", "WARN", "message~", "interrupted; state saved", "stage", bootstrapped, "exit_code", fmt.Sprint(exitCode))
	eventually(t, 5*time.Second, "the script's group to be gone", func() bool { return !groupAlive(pg) })
	require.Equal(t, "signal:TERM", n.runs(bootstrapped, "slow")[0].exit)
	require.Empty(t, n.scriptLog(bootstrapped, "third"))

	st, code := n.status()
	require.Equal(t, 3, code, "an interrupted stage counts as 3")
	require.False(t, st.Running)
	require.Equal(t, "interrupted", stageOf(t, st, bootstrapped).Status)
	require.Equal(t, "succeeded", scriptOf(t, st, bootstrapped, "first").ThisBoot)
	require.Equal(t, "interrupted", scriptOf(t, st, bootstrapped, "slow").ThisBoot)
	require.Equal(t, "pending", scriptOf(t, st, bootstrapped, "third").ThisBoot)
	n.requireLog("level", "WARN", "message", "stage interrupted", "stage", bootstrapped)

	// The same boot again: resume.
	require.NoError(t, os.WriteFile(release, nil, 0o644))
	n.requireRun(0, "run", "--stage", bootstrapped)
	require.Len(t, n.runs(bootstrapped, "first"), 1, "a script that finished in this boot is not run again")
	slow := n.runs(bootstrapped, "slow")
	require.Len(t, slow, 2, "the interrupted script runs again")
	require.Contains(t, slow[1].output, "released\n")
	require.Len(t, n.runs(bootstrapped, "third"), 1)
	n.requireLog("level", "WARN", "message~", "resuming")
	st, code = n.status()
	require.Equal(t, 0, code)
	require.Equal(t, "succeeded", stageOf(t, st, bootstrapped).Status)
	require.Equal(t, 2, scriptOf(t, st, bootstrapped, "slow").Runs)
	require.Equal(t, 1, scriptOf(t, st, bootstrapped, "first").Runs)
}

// TestInterruptedPrefetchResumes: SIGTERM during the boot's downloads interrupts the stage; the
// stage resumed in the same boot still gives every download its full attempts (SPEC §3: each
// download is tried 3 times, then one more at its turn, before its onError applies).
func TestInterruptedPrefetchResumes(t *testing.T) {
	t.Parallel()
	w := newWeb(t)
	n := newNode(t, withCA(w))
	// Request 1 hangs (the executor is stopped during it), requests 2 and 3 fail, 4 succeeds.
	w.serve("/slow.sh", webFile{data: okScript("slow-ran"), delay: 30 * time.Second})
	cfg := n.writeConfig(stages([]scriptDef{script("slow", w.URL+"/slow.sh")}, nil))
	p := n.start("run", "--stage", bootstrapped, "--config", cfg)
	eventually(t, 20*time.Second, "the download to start", func() bool { return w.requests("/slow.sh") == 1 })
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	r := p.wait(t, 20*time.Second)
	require.Equal(t, 143, r.code, "%s", r)
	st, code := n.status()
	require.Equal(t, 3, code)
	require.Equal(t, "interrupted", stageOf(t, st, bootstrapped).Status)
	// Stopped during the downloads, before any script started: none is charged with a run.
	require.Equal(t, "pending", scriptOf(t, st, bootstrapped, "slow").ThisBoot)
	require.Zero(t, scriptOf(t, st, bootstrapped, "slow").Runs)
	require.NoFileExists(t, n.scriptLogPath(bootstrapped, "slow"))

	w.serve("/slow.sh", webFile{data: okScript("slow-ran"), failFirst: 3})
	r = n.run("run", "--stage", bootstrapped)
	require.Equal(t, 0, r.code, "a resumed stage must retry a download like any other (requests made: %d)\n%s", w.requests("/slow.sh"), r)
	require.Equal(t, []string{"slow-ran\n"}, n.outputs(bootstrapped, "slow"))
}

// TestKilledExecutorResumesSameBoot: an executor killed outright (SIGKILL, no chance to record
// anything) leaves a stage that the next run in the same boot resumes: the script that was
// running runs again, the ones that finished do not.
func TestKilledExecutorResumesSameBoot(t *testing.T) {
	t.Parallel()
	b := newBucket(t)
	n := newNode(t)
	release := filepath.Join(t.TempDir(), "release")
	cfg := n.writeConfig(stages([]scriptDef{
		script("first", b.put(t, "first.sh", okScript("first-ran"))),
		script("slow", b.put(t, "slow.sh", waitScript(release))),
		script("third", b.put(t, "third.sh", okScript("third-ran"))),
	}, nil))
	p, pg := n.startWaiting(t, "slow", "--config", cfg)
	p.powerCut(t, pg)

	st, code := n.status()
	require.Equal(t, 3, code)
	require.Equal(t, "interrupted", stageOf(t, st, bootstrapped).Status)
	require.Equal(t, "interrupted", scriptOf(t, st, bootstrapped, "slow").ThisBoot)

	require.NoError(t, os.WriteFile(release, nil, 0o644))
	n.requireRun(0, "run", "--stage", bootstrapped)
	require.Len(t, n.runs(bootstrapped, "first"), 1)
	slow := n.runs(bootstrapped, "slow")
	require.Len(t, slow, 2)
	require.Empty(t, slow[0].end, "the killed run has no end line")
	require.Contains(t, slow[1].output, "released\n")
	require.Equal(t, []string{"third-ran\n"}, n.outputs(bootstrapped, "third"))
	st, code = n.status()
	require.Equal(t, 0, code)
	require.Equal(t, "succeeded", stageOf(t, st, bootstrapped).Status)
}
