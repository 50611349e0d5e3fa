package e2e_test

import (
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/testenv"
)

// TestOnError: a failing script under each onError, and what happens to the rest of its
// stage and to the next stage (SPEC §4, the seed experiment).
func TestOnError(t *testing.T) {
	t.Parallel()
	b := newBucket(t)
	fail := b.put(t, "fail.sh", failScript(1))
	ok := b.put(t, "ok.sh", okScript("ran"))
	cases := []struct {
		onError             string
		logName, message    string
		bootCode, readyCode int
		nextRuns, readyRuns bool
	}{
		{"CONTINUE", "Continue", "lifecycle script failed; continuing with remaining scripts", 3, 0, true, true},
		{"STOP_SEQUENCE", "StopSequence", "lifecycle script failed; stopping remaining scripts", 3, 0, false, true},
		{"TERMINATE", "Terminate", "lifecycle script failed; terminating", 4, 4, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.onError, func(t *testing.T) {
			t.Parallel()
			n := newNode(t)
			cfg := n.writeConfig(stages(
				[]scriptDef{script("fails", fail).onErr(tc.onError), script("next", ok)},
				[]scriptDef{script("ready-check", ok).onErr("CONTINUE")}))
			r := n.requireRun(tc.bootCode, "run", "--stage", bootstrapped, "--config", cfg)
			require.Contains(t, r.stderr, "nodeBootstrapped/fails failed (exit=1")
			fr := n.runs(bootstrapped, "fails")
			require.Len(t, fr, 1)
			require.Equal(t, "intentional failure\n", fr[0].output)
			require.Equal(t, "1", fr[0].exit)
			require.Equal(t, tc.nextRuns, n.scriptLog(bootstrapped, "next") != "")
			e := n.requireLog("level", "ERROR", "stage", bootstrapped, "script", "fails", "on_error", tc.logName, "exit_code", "1")
			require.True(t, strings.HasPrefix(e.str("message"), tc.message), e.str("message"))
			if !tc.nextRuns {
				n.requireLog("script", "next", "message", "skipping script", "reason~", tc.onError)
			}
			n.requireRun(tc.readyCode, "run", "--stage", ready)
			require.Equal(t, tc.readyRuns, n.scriptLog(ready, "ready-check") != "")
		})
	}
}

// TestS3VersionPinned: s3VersionId fetches that version, not the latest.
func TestS3VersionPinned(t *testing.T) {
	t.Parallel()
	srv := testenv.SharedS3(t)
	bucket := srv.NewBucket(t)
	v1 := srv.PutVersioned(t, bucket, "pinned.sh", okScript("version-one"))
	v2 := srv.PutVersioned(t, bucket, "pinned.sh", okScript("version-two"))
	require.NotEqual(t, v1, v2)
	n := newNode(t)
	s := script("pinned", "s3://"+bucket+"/pinned.sh")
	s.ScriptSource.S3VersionID = v1
	cfg := n.writeConfig(stages([]scriptDef{s, script("latest", "s3://"+bucket+"/pinned.sh")}, nil))
	n.requireRun(0, "run", "--stage", bootstrapped, "--config", cfg)
	require.Equal(t, []string{"version-one\n"}, n.outputs(bootstrapped, "pinned"))
	require.Equal(t, []string{"version-two\n"}, n.outputs(bootstrapped, "latest"))
}

// TestHTTPSProxy: https downloads go through HTTPS_PROXY when it is set. The script's host is
// a name only the proxy sees (it tunnels to the test server), so nothing is resolved.
func TestHTTPSProxy(t *testing.T) {
	t.Parallel()
	w := newWeb(t)
	proxy := testenv.StartConnectProxy(t, w.Addr)
	w.put("/proxied.sh", okScript("via-proxy"))
	n := newNode(t, withCA(w), withEnv("HTTPS_PROXY", proxy.URL))
	loc := w.URLFor("scripts.localhost", "/proxied.sh")
	cfg := n.writeConfig(stages([]scriptDef{script("proxied", loc)}, nil))
	n.requireRun(0, "run", "--stage", bootstrapped, "--config", cfg)
	require.Equal(t, []string{"via-proxy\n"}, n.outputs(bootstrapped, "proxied"))
	require.Contains(t, proxy.Targets(), "scripts.localhost:"+w.Port)
	require.Equal(t, 1, w.requests("/proxied.sh"))
}

// TestScriptIgnoringTERM: a script group that ignores SIGTERM at its timeout is killed with
// SIGKILL after the 10 s grace.
func TestScriptIgnoringTERM(t *testing.T) {
	t.Parallel()
	b := newBucket(t)
	n := newNode(t)
	// The script notes the SIGTERM and goes on waiting for a child that ignores it.
	body := "trap 'echo got-TERM' TERM\necho \"pgid=$$\"\n(trap '' TERM; exec sleep 60) &\nwait\nwait"
	cfg := n.writeConfig(stages([]scriptDef{script("stubborn", b.put(t, "stubborn.sh", sh(body))).onErr("CONTINUE")}, nil))
	r := n.run("run", "--stage", bootstrapped, "--config", cfg, "--script-timeout", "200ms")
	pg := n.pgidIn(bootstrapped, "stubborn")
	t.Cleanup(func() { killGroup(pg) })
	require.Equal(t, 3, r.code, "%s", r)
	run := n.runs(bootstrapped, "stubborn")[0]
	require.Contains(t, run.output, "got-TERM\n", "SIGTERM first")
	require.Equal(t, "signal:KILL", run.exit, "then SIGKILL, after the grace")
	require.False(t, groupAlive(pg))
}

// TestFetch: fetch downloads every script of both stages into the cache, concurrently; the
// boot's run then needs no download.
func TestFetch(t *testing.T) {
	t.Parallel()
	w := newWeb(t)
	n := newNode(t, withCA(w))
	cfg := n.writeConfig(stages(
		[]scriptDef{script("f1", w.put("/f1.sh", okScript("f1"))), script("f2", w.put("/f2.sh", okScript("f2"))).every()},
		[]scriptDef{script("f3", w.put("/f3.sh", okScript("f3")))}))
	r := n.requireRun(0, "fetch", "--config", cfg)
	for _, s := range []string{"nodeBootstrapped/f1", "nodeBootstrapped/f2", "nodeReady/f3"} {
		require.Regexp(t, `(?m)^ok\s+`+s+` https://`, r.stdout)
	}
	require.ElementsMatch(t, []string{"f1", "f2", "f3"}, n.cachedFiles())
	require.EqualValues(t, 3, w.total.Load())
	require.NoDirExists(t, n.logDir()+"/"+bootstrapped, "fetch runs nothing")

	n.requireRun(0, "run", "--stage", bootstrapped)
	n.requireRun(0, "run", "--stage", ready)
	require.EqualValues(t, 3, w.total.Load(), "the boot's run uses what fetch downloaded")
	require.Equal(t, []string{"f3\n"}, n.outputs(ready, "f3"))

}

// TestFetchOnReboot: on a later boot fetch downloads (refreshes) every script again, also under
// CACHE_ONCE; a source that fails is reported FAILED, the others ok.
func TestFetchOnReboot(t *testing.T) {
	t.Parallel()
	w := newWeb(t)
	n := newNode(t, withCA(w))
	cfg := n.writeConfig(stages(
		[]scriptDef{script("f1", w.put("/f1.sh", okScript("f1"))), script("f2", w.put("/f2.sh", okScript("f2"))).every()},
		[]scriptDef{script("f3", w.put("/f3.sh", okScript("f3")))}))
	n.requireRun(0, "run", "--stage", bootstrapped, "--config", cfg)
	require.EqualValues(t, 3, w.total.Load())

	w.serve("/f2.sh", webFile{status: 404})
	n.reboot()
	r := n.run("fetch")
	require.NotEqual(t, 0, r.code, "%s", r)
	require.Regexp(t, `(?m)^ok\s+nodeBootstrapped/f1 `, r.stdout)
	require.Regexp(t, `(?m)^ok\s+nodeReady/f3 `, r.stdout)
	require.Equal(t, 2, w.requests("/f1.sh"), "fetch downloads again")
	require.Regexp(t, `(?m)^FAILED\s+nodeBootstrapped/f2 `, r.stdout)
}

// TestHarnessGroupAlive checks the helper the process-group assertions rely on.
func TestHarnessGroupAlive(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("sleep", "30")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	pg := cmd.Process.Pid
	require.True(t, groupAlive(pg))
	killGroup(pg)
	_ = cmd.Wait()
	require.False(t, groupAlive(pg))
}
