package e2e_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// MaxScript is the service's script size limit (SPEC §3).
const maxScript = 2 << 20

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// sizedScript is a #!/bin/sh script of exactly size bytes that prints marker.
func sizedScript(size int, marker string) []byte {
	head := "#!/bin/sh\necho " + marker + "\nexit 0\n#"
	pad := size - len(head) - 1
	return []byte(head + strings.Repeat("x", pad) + "\n")
}

// cachedFiles lists the cache's scripts folder (nil when it does not exist).
func (n *node) cachedFiles() []string {
	n.t.Helper()
	ents, err := os.ReadDir(n.scriptsDir())
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(n.t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// TestDownloadSources: scripts from s3:// and https:// (trusted through SSL_CERT_FILE) run;
// an upper-case checksum that matches is accepted; a script of exactly 2 MiB is accepted.
func TestDownloadSources(t *testing.T) {
	t.Parallel()
	b := newBucket(t)
	w := newWeb(t)
	big := sizedScript(maxScript, "big-ran")
	require.Len(t, big, maxScript)

	cases := []struct {
		name   string
		loc    func() string
		sum    string
		marker string
	}{
		{"s3", func() string { return b.put(t, "ok.sh", okScript("from-s3")) }, "", "from-s3"},
		{"https with SSL_CERT_FILE", func() string { return w.put("/ok.sh", okScript("from-https")) }, "", "from-https"},
		{"s3 checksum upper-case", func() string { return b.put(t, "sum.sh", okScript("s3-sum")) },
			strings.ToUpper(sha256Hex(okScript("s3-sum"))), "s3-sum"},
		{"https checksum upper-case", func() string { return w.put("/sum.sh", okScript("https-sum")) },
			strings.ToUpper(sha256Hex(okScript("https-sum"))), "https-sum"},
		{"s3 exactly 2 MiB", func() string { return b.put(t, "big.sh", big) }, "", "big-ran"},
		{"https exactly 2 MiB", func() string { return w.put("/big.sh", big) }, "", "big-ran"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			n := newNode(t, withCA(w))
			loc := tc.loc()
			cfg := n.writeConfig(stages([]scriptDef{script("fetched", loc).checksum(tc.sum)}, nil))
			n.requireRun(0, "run", "--stage", bootstrapped, "--config", cfg)

			rs := n.runs(bootstrapped, "fetched")
			require.Len(t, rs, 1)
			require.Equal(t, tc.marker+"\n", rs[0].output)
			require.Equal(t, "0", rs[0].exit)
			dl := n.requireLog("level", "INFO", "message", "Downloaded script", "script", "fetched", "stage", bootstrapped, "location", loc)
			require.Contains(t, dl, "duration_ms")
			n.requireLog("message", "downloads finished", "scripts", "1")

			st, code := n.status()
			require.Equal(t, 0, code)
			sc := scriptOf(t, st, bootstrapped, "fetched")
			require.Equal(t, "succeeded", sc.ThisBoot)
			require.Equal(t, loc, sc.Location)
			require.NotNil(t, sc.ExitCode)
			require.Equal(t, 0, *sc.ExitCode)
			require.Equal(t, 1, sc.Runs)
		})
	}
}

// TestDownloadFailures: every kind of download failure is the script's failure under its
// onError, names the thing in executor.log and status, runs nothing, caches nothing.
func TestDownloadFailures(t *testing.T) {
	t.Parallel()
	b := newBucket(t)
	trusted := newWeb(t)
	untrusted := newWeb(t)
	goodS3 := b.put(t, "good.sh", okScript("next-ran"))
	goodHTTPS := trusted.put("/good.sh", okScript("next-ran"))
	tooBig := sizedScript(maxScript+1, "too-big-ran")

	type setup struct {
		bad, good string
		sum       string
		opts      []nodeOpt
	}
	cases := []struct {
		name     string
		setup    func() setup
		onError  string
		wantCode int
		nextRuns bool
		errHas   string
	}{
		{"https untrusted CONTINUE", func() setup {
			return setup{bad: untrusted.put("/u1.sh", okScript("ran")), good: goodS3}
		}, "CONTINUE", 3, true, "not trusted"},
		{"https untrusted STOP_SEQUENCE", func() setup {
			return setup{bad: untrusted.put("/u2.sh", okScript("ran")), good: goodS3}
		}, "STOP_SEQUENCE", 3, false, "not trusted"},
		{"https untrusted TERMINATE", func() setup {
			return setup{bad: untrusted.put("/u3.sh", okScript("ran")), good: goodS3}
		}, "TERMINATE", 4, false, "not trusted"},
		{"s3 404", func() setup {
			return setup{bad: "s3://" + b.name + "/no/such/script.sh", good: goodS3}
		}, "CONTINUE", 3, true, "not found (404)"},
		{"s3 403 bad credentials", func() setup {
			return setup{bad: b.put(t, "secret.sh", okScript("ran")), good: goodHTTPS,
				opts: []nodeOpt{withCA(trusted), withEnv("AWS_SECRET_ACCESS_KEY", "not-the-secret-key-at-all")}}
		}, "CONTINUE", 3, true, "access denied (403)"},
		{"https 404", func() setup {
			return setup{bad: trusted.URL + "/missing.sh", good: goodHTTPS, opts: []nodeOpt{withCA(trusted)}}
		}, "CONTINUE", 3, true, "not found (404)"},
		{"s3 checksum mismatch", func() setup {
			return setup{bad: b.put(t, "sum.sh", okScript("ran")), good: goodS3, sum: sha256Hex([]byte("something else"))}
		}, "CONTINUE", 3, true, "checksum mismatch"},
		{"https checksum mismatch", func() setup {
			return setup{bad: trusted.put("/sum.sh", okScript("ran")), good: goodHTTPS,
				sum: strings.ToUpper(sha256Hex([]byte("other"))), opts: []nodeOpt{withCA(trusted)}}
		}, "STOP_SEQUENCE", 3, false, "checksum mismatch"},
		{"s3 over 2 MiB", func() setup {
			return setup{bad: b.put(t, "toobig.sh", tooBig), good: goodS3}
		}, "CONTINUE", 3, true, "too large"},
		{"https over 2 MiB", func() setup {
			return setup{bad: trusted.put("/toobig.sh", tooBig), good: goodHTTPS, opts: []nodeOpt{withCA(trusted)}}
		}, "CONTINUE", 3, true, "too large"},
	}
	onErrorName := map[string]string{"CONTINUE": "Continue", "STOP_SEQUENCE": "StopSequence", "TERMINATE": "Terminate"}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := tc.setup()
			n := newNode(t, s.opts...)
			cfg := n.writeConfig(stages([]scriptDef{
				script("bad", s.bad).checksum(s.sum).onErr(tc.onError),
				script("next", s.good),
			}, nil))
			r := n.requireRun(tc.wantCode, "run", "--stage", bootstrapped, "--config", cfg)
			require.Contains(t, r.stderr, "bad")

			// The failed script never started, and nothing of it is in the cache.
			require.Empty(t, n.scriptLog(bootstrapped, "bad"), "a script whose download failed must not run")
			require.NotContains(t, n.cachedFiles(), "bad")
			for _, f := range n.cachedFiles() {
				require.Equal(t, "next", f, "only the good script may be in the cache (no temp files)")
			}
			if tc.nextRuns {
				rs := n.runs(bootstrapped, "next")
				require.Len(t, rs, 1)
				require.Equal(t, "next-ran\n", rs[0].output)
			} else {
				require.Empty(t, n.scriptLog(bootstrapped, "next"))
			}

			// executor.log: the prefetch failure, and the failure under its onError.
			w := n.requireLog("level", "WARN", "script", "bad", "message~", "download failed")
			require.Contains(t, w.str("error"), tc.errHas)
			require.Contains(t, w.str("error"), s.bad)
			e := n.requireLog("level", "ERROR", "script", "bad", "stage", bootstrapped, "message~", "lifecycle script failed",
				"on_error", onErrorName[tc.onError])
			require.Contains(t, e.str("error"), tc.errHas)

			st, code := n.status()
			require.Equal(t, tc.wantCode, code)
			sc := scriptOf(t, st, bootstrapped, "bad")
			require.Equal(t, "download_failed", sc.ThisBoot)
			require.Contains(t, sc.Error, tc.errHas)
			require.Equal(t, 0, sc.Runs)
			if tc.onError == "TERMINATE" {
				require.NotNil(t, st.Terminated)
				require.Equal(t, "bad", st.Terminated.Script)
			}
			if !tc.nextRuns {
				require.Equal(t, "not_run", scriptOf(t, st, bootstrapped, "next").ThisBoot)
			}
		})
	}
}

// TestDownloadsConcurrent: ten https scripts are downloaded at once (the server answers none
// until all ten requests are in flight together), before the first script runs.
func TestDownloadsConcurrent(t *testing.T) {
	t.Parallel()
	w := newWeb(t)
	n := newNode(t, withCA(w))
	var boot, rdy []scriptDef
	for i := 0; i < 10; i++ {
		loc := w.serve(fmt.Sprintf("/slow-%d.sh", i), webFile{data: okScript(fmt.Sprintf("slow-%d", i)), together: 10})
		s := script(fmt.Sprintf("slow-%d", i), loc)
		if i < 5 {
			boot = append(boot, s)
		} else {
			rdy = append(rdy, s)
		}
	}
	cfg := n.writeConfig(stages(boot, rdy))
	n.requireRun(0, "run", "--stage", bootstrapped, "--config", cfg)
	fin := n.requireLog("message", "downloads finished")
	require.EqualValues(t, 10, fin["scripts"], "both stages' scripts are downloaded before the first stage")
	_, ok := fin.num("duration_ms")
	require.True(t, ok)
	for i := 0; i < 10; i++ {
		require.Equal(t, 1, w.requests(fmt.Sprintf("/slow-%d.sh", i)))
	}
	// The downloads all finished before the first script started.
	lines := n.executorLog()
	finIdx, startIdx := -1, -1
	for i, l := range lines {
		if l.str("message") == "downloads finished" && finIdx < 0 {
			finIdx = i
		}
		if l.str("message") == "starting script" && startIdx < 0 {
			startIdx = i
		}
	}
	require.Less(t, finIdx, startIdx)
	// nodeReady needs no download any more.
	n.requireRun(0, "run", "--stage", ready)
	for i := 0; i < 10; i++ {
		require.Equal(t, 1, w.requests(fmt.Sprintf("/slow-%d.sh", i)))
	}
}

// TestDownloadRetry: a download that fails twice and then succeeds is retried and the script
// runs (3 requests).
func TestDownloadRetry(t *testing.T) {
	t.Parallel()
	w := newWeb(t)
	n := newNode(t, withCA(w))
	loc := w.serve("/flaky.sh", webFile{data: okScript("flaky-ran"), failFirst: 2})
	cfg := n.writeConfig(stages([]scriptDef{script("flaky", loc)}, nil))
	n.requireRun(0, "run", "--stage", bootstrapped, "--config", cfg)
	require.Equal(t, 3, w.requests("/flaky.sh"))
	require.Equal(t, "flaky-ran\n", n.runs(bootstrapped, "flaky")[0].output)
	require.Len(t, n.find("level", "WARN", "message~", "retrying", "location", loc), 2)
	n.requireLog("message", "Downloaded script", "script", "flaky")
}

// TestFailedPrefetchOneMoreAttempt: a download that fails all its attempts in the prefetch gets
// exactly one more at its turn, in either stage; then its onError applies.
func TestFailedPrefetchOneMoreAttempt(t *testing.T) {
	t.Parallel()
	w := newWeb(t)
	n := newNode(t, withCA(w))
	down1 := w.serve("/down1.sh", webFile{status: 503})
	down2 := w.serve("/down2.sh", webFile{status: 503})
	ok := w.put("/ok.sh", okScript("ok-ran"))
	cfg := n.writeConfig(stages(
		[]scriptDef{script("down1", down1).onErr("CONTINUE"), script("ok", ok)},
		[]scriptDef{script("down2", down2).onErr("CONTINUE")}))
	n.requireRun(3, "run", "--stage", bootstrapped, "--config", cfg)
	require.Equal(t, 4, w.requests("/down1.sh"), "3 attempts in the prefetch, 1 at its turn")
	require.Equal(t, 3, w.requests("/down2.sh"), "nodeReady's script is prefetched with the rest")
	require.Equal(t, 1, w.requests("/ok.sh"))
	e := n.requireLog("level", "ERROR", "script", "down1", "on_error", "Continue")
	require.Contains(t, e.str("error"), "server error (503)")
	require.Equal(t, "ok-ran\n", n.runs(bootstrapped, "ok")[0].output)

	n.requireRun(3, "run", "--stage", ready)
	require.Equal(t, 4, w.requests("/down2.sh"), "one more attempt at its turn in nodeReady")
	require.Equal(t, 4, w.requests("/down1.sh"))
	st, code := n.status()
	require.Equal(t, 3, code)
	require.Equal(t, "download_failed", scriptOf(t, st, ready, "down2").ThisBoot)

	// --download-attempts tunes the prefetch's attempts; the one at the script's turn stays.
	n2 := newNode(t, withCA(w))
	down3 := w.serve("/down3.sh", webFile{status: 503})
	cfg = n2.writeConfig(stages([]scriptDef{script("down3", down3).onErr("CONTINUE")}, nil))
	n2.requireRun(3, "run", "--stage", bootstrapped, "--config", cfg, "--download-attempts", "1")
	require.Equal(t, 2, w.requests("/down3.sh"))
}

// TestCacheOnceRebootOffline: under CACHE_ONCE a reboot runs every script from the cache
// without touching the network; the cache is 0700 throughout.
func TestCacheOnceRebootOffline(t *testing.T) {
	t.Parallel()
	b := newBucket(t)
	w := newWeb(t)
	n := newNode(t, withCA(w))
	s3loc := b.put(t, "every.sh", okScript("s3-every"))
	webloc := w.put("/every.sh", okScript("https-every"))
	cfg := n.writeConfig(stages(
		[]scriptDef{script("s3-every", s3loc).every(), script("https-every", webloc).every()}, nil).caching("CACHE_ONCE"))
	n.requireRun(0, "run", "--stage", bootstrapped, "--config", cfg)
	require.Equal(t, 1, w.requests("/every.sh"))

	require.Equal(t, os.FileMode(0o700), modeOf(t, n.cacheDir()))
	require.Equal(t, os.FileMode(0o700), modeOf(t, n.scriptsDir()))
	for _, f := range []string{"s3-every", "https-every"} {
		require.Equal(t, os.FileMode(0o700), modeOf(t, filepath.Join(n.scriptsDir(), f)), f)
	}
	require.ElementsMatch(t, []string{"s3-every", "https-every"}, n.cachedFiles())

	// Nothing to download from any more.
	b.remove(t, "every.sh")
	w.Close()
	before := w.total.Load()
	for boot := 2; boot <= 3; boot++ {
		n.reboot()
		n.requireRun(0, "run", "--stage", bootstrapped)
		require.Len(t, n.runs(bootstrapped, "s3-every"), boot)
		require.Len(t, n.runs(bootstrapped, "https-every"), boot)
		require.Equal(t, "s3-every\n", n.runs(bootstrapped, "s3-every")[boot-1].output)
	}
	require.Equal(t, before, w.total.Load(), "a CACHE_ONCE reboot makes no request")
	n.requireLog("message", "Reusing cached script (CACHE_ONCE)", "script", "s3-every", "stage", bootstrapped)
	n.requireLog("message", "Reusing cached script (CACHE_ONCE)", "script", "https-every")
	require.Empty(t, n.find("level", "WARN", "message~", "download"))
	require.Equal(t, os.FileMode(0o700), modeOf(t, filepath.Join(n.scriptsDir(), "s3-every")))
}

// TestRefreshOnReboot: REFRESH_ON_REBOOT downloads again on every boot (new content runs); a
// failed refresh is a download failure, never a fallback to the cached copy.
func TestRefreshOnReboot(t *testing.T) {
	t.Parallel()
	w := newWeb(t)
	b := newBucket(t)
	n := newNode(t, withCA(w))
	loc := w.put("/refresh.sh", okScript("version-1"))
	s3loc := b.put(t, "refresh.sh", okScript("s3-version-1"))
	once := w.put("/once.sh", okScript("once"))
	cfg := n.writeConfig(stages([]scriptDef{
		script("refreshed", loc).every().onErr("CONTINUE"),
		script("s3-refreshed", s3loc).every().onErr("CONTINUE"),
		script("once", once).firstOnly(),
	}, nil).caching("REFRESH_ON_REBOOT"))
	n.requireRun(0, "run", "--stage", bootstrapped, "--config", cfg)
	require.Equal(t, 1, w.requests("/refresh.sh"))

	w.put("/refresh.sh", okScript("version-2"))
	b.put(t, "refresh.sh", okScript("s3-version-2"))
	n.reboot()
	n.requireRun(0, "run", "--stage", bootstrapped)
	require.Equal(t, 2, w.requests("/refresh.sh"))
	rs := n.runs(bootstrapped, "refreshed")
	require.Len(t, rs, 2)
	require.Equal(t, "version-2\n", rs[1].output)
	require.Equal(t, "s3-version-2\n", n.runs(bootstrapped, "s3-refreshed")[1].output)
	require.Empty(t, n.find("message", "Reusing cached script (CACHE_ONCE)"))
	require.Equal(t, 1, w.requests("/once.sh"), "a script that does not run this boot is not downloaded")

	// The source fails: no fallback to version-2 in the cache.
	w.serve("/refresh.sh", webFile{status: 500})
	b.remove(t, "refresh.sh")
	n.reboot()
	n.requireRun(3, "run", "--stage", bootstrapped)
	require.Equal(t, 2+3+1, w.requests("/refresh.sh"))
	require.Len(t, n.runs(bootstrapped, "refreshed"), 2, "the cached copy must not run")
	require.Len(t, n.runs(bootstrapped, "s3-refreshed"), 2, "the cached copy must not run")
	st, code := n.status()
	require.Equal(t, 3, code)
	require.Equal(t, "download_failed", scriptOf(t, st, bootstrapped, "refreshed").ThisBoot)
	require.Equal(t, "download_failed", scriptOf(t, st, bootstrapped, "s3-refreshed").ThisBoot)
	n.requireLog("level", "ERROR", "script", "refreshed", "on_error", "Continue")
	n.requireLog("level", "ERROR", "script", "s3-refreshed", "on_error", "Continue")
}

// TestCachedScriptTampered: a cached script changed on disk is never executed nor silently
// downloaded again (CACHE_ONCE); an ERROR line names it and its onError applies.
func TestCachedScriptTampered(t *testing.T) {
	t.Parallel()
	w := newWeb(t)
	n := newNode(t, withCA(w))
	loc := w.put("/guarded.sh", okScript("genuine"))
	after := w.put("/after.sh", okScript("after-ran"))
	cfg := n.writeConfig(stages([]scriptDef{
		script("guarded", loc).every().onErr("STOP_SEQUENCE"),
		script("after", after).every(),
	}, nil))
	n.requireRun(0, "run", "--stage", bootstrapped, "--config", cfg)
	require.Equal(t, 1, w.requests("/guarded.sh"))

	cached := filepath.Join(n.scriptsDir(), "guarded")
	marker := filepath.Join(t.TempDir(), "tampered-ran")
	require.NoError(t, os.WriteFile(cached, sh("touch "+marker+"\necho TAMPERED"), 0o700))
	require.Equal(t, os.FileMode(0o700), modeOf(t, cached))

	n.reboot()
	r := n.requireRun(3, "run", "--stage", bootstrapped)
	require.Equal(t, 1, w.requests("/guarded.sh"), "a tampered CACHE_ONCE copy is not downloaded again")
	require.NoFileExists(t, marker)
	require.NotContains(t, n.scriptLog(bootstrapped, "guarded"), "TAMPERED")
	require.Len(t, n.runs(bootstrapped, "guarded"), 1)
	require.Len(t, n.runs(bootstrapped, "after"), 1, "STOP_SEQUENCE applies: the rest of the stage does not run")
	e := n.requireLog("level", "ERROR", "script", "guarded", "message~", "verification")
	require.Contains(t, fmt.Sprint(e), cached)
	n.requireLog("level", "ERROR", "script", "guarded", "on_error", "StopSequence")
	require.Contains(t, r.stderr, "guarded")
	st, _ := n.status()
	require.Equal(t, "download_failed", scriptOf(t, st, bootstrapped, "guarded").ThisBoot)
	require.Equal(t, "not_run", scriptOf(t, st, bootstrapped, "after").ThisBoot)

	// It stays refused on later boots too.
	n.reboot()
	n.requireRun(3, "run", "--stage", bootstrapped)
	require.NoFileExists(t, marker)
	require.Equal(t, 1, w.requests("/guarded.sh"))
}

// TestConfigCache: the configuration is cached at first boot; later boots use it without
// --config; a later --config with other content is logged at WARN and ignored.
func TestConfigCache(t *testing.T) {
	t.Parallel()
	b := newBucket(t)
	n := newNode(t)
	d1 := stages([]scriptDef{script("from-first-config", b.put(t, "one.sh", okScript("config-one"))).every()}, nil)
	d2 := stages([]scriptDef{script("from-second-config", b.put(t, "two.sh", okScript("config-two"))).every()}, nil)
	cfg1 := n.writeConfig(d1)
	n.requireRun(0, "run", "--stage", bootstrapped, "--config", cfg1)
	want, err := os.ReadFile(cfg1)
	require.NoError(t, err)
	got, err := os.ReadFile(n.cachedConfig())
	require.NoError(t, err, "the configuration is cached at etc/amazon/pcs/lifecycle/actions/config/node-lifecycle-actions.json")
	require.Equal(t, want, got)

	n.reboot()
	n.requireRun(0, "run", "--stage", bootstrapped)
	require.Len(t, n.runs(bootstrapped, "from-first-config"), 2)

	n.reboot()
	cfg2 := n.writeConfig(d2)
	r := n.requireRun(0, "run", "--stage", bootstrapped, "--config", cfg2)
	// One clear line: what is used instead, and how to test an edit.
	line := "pcs-lifecycle: --config " + cfg2 + " differs from the configuration cached at this instance's first boot; " +
		"using the cached copy " + n.cachedConfig() + ". An instance's configuration never changes: to test an edit, " +
		"use a new instance (another --instance-id or --root) or `pcs-lifecycle try " + cfg2 + " --scripts-from DIR`\n"
	require.Equal(t, 1, strings.Count(r.stderr, "differs"), "%s", r.stderr)
	require.Contains(t, r.stderr, line)
	p := n.requireRun(0, "plan", "--config", cfg2)
	require.Equal(t, line, p.stderr, "plan says it too")
	require.Contains(t, p.stdout, "from-first-config", "plan shows the cached document, as run uses it")
	require.NotContains(t, p.stdout, "from-second-config")
	require.Len(t, n.runs(bootstrapped, "from-first-config"), 3)
	n.reboot()
	n.env["SLURM_CONF"] = "/nonexistent/slurm.conf"
	d := n.run("daemon", "--config", cfg2, "--registration-timeout", "0")
	require.Equal(t, 0, d.code, "%s", d)
	require.Contains(t, d.stderr, line, "daemon says it too")
	require.Len(t, n.runs(bootstrapped, "from-first-config"), 4)
	require.Empty(t, n.scriptLog(bootstrapped, "from-second-config"), "a differing --config is ignored")
	n.requireLog("level", "WARN", "message~", "--config differs")
	got, err = os.ReadFile(n.cachedConfig())
	require.NoError(t, err)
	require.Equal(t, want, got)

	// The same --config again is no news.
	warns := len(n.find("level", "WARN", "message~", "--config differs"))
	n.reboot()
	r = n.requireRun(0, "run", "--stage", bootstrapped, "--config", cfg1)
	require.NotContains(t, r.stderr, "differs")
	require.Len(t, n.find("level", "WARN", "message~", "--config differs"), warns)
}

// TestConfigRemote: --config may name an s3:// or https:// document.
func TestConfigRemote(t *testing.T) {
	t.Parallel()
	b := newBucket(t)
	w := newWeb(t)
	for _, kind := range []string{"s3", "https"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			n := newNode(t, withCA(w))
			d := stages([]scriptDef{script("remote-config", b.put(t, "rc-"+kind+".sh", okScript("remote-"+kind)))}, nil)
			data := d.json(t)
			loc := b.put(t, "config-"+kind+".json", data)
			if kind == "https" {
				loc = w.put("/config.json", data)
			}
			n.requireRun(0, "run", "--stage", bootstrapped, "--config", loc)
			require.Equal(t, "remote-"+kind+"\n", n.runs(bootstrapped, "remote-config")[0].output)
			got, err := os.ReadFile(n.cachedConfig())
			require.NoError(t, err)
			require.True(t, bytes.Equal(data, got), "the cached configuration is the document as fetched")
			n.requireLog("message", "configuration cached", "config", loc)
		})
	}
}

// TestDownloadFailureMessage: the console line for a script whose download failed names the
// script, the location and the reason, and does not claim an exit status the script never had.
func TestDownloadFailureMessage(t *testing.T) {
	t.Parallel()
	b := newBucket(t)
	n := newNode(t)
	loc := "s3://" + b.name + "/absent.sh"
	cfg := n.writeConfig(stages([]scriptDef{script("absent", loc).onErr("CONTINUE")}, nil))
	r := n.requireRun(3, "run", "--stage", bootstrapped, "--config", cfg)
	line := ""
	for _, l := range strings.Split(r.stderr, "\n") {
		if strings.HasPrefix(l, "pcs-lifecycle: nodeBootstrapped/absent failed") {
			line = l
		}
	}
	require.NotEmpty(t, line, "%s", r)
	require.Contains(t, line, loc)
	require.Contains(t, line, "not found (404)")
	require.NotContains(t, line, "exit=0", "a script that never ran has no exit status")
	require.Equal(t, 1, strings.Count(line, "download "+loc), "the location is named once, not wrapped twice: %s", line)
	// What to act on, not the SDK's wrapping (versitygw is an http:// endpoint).
	require.Contains(t, line, "NoSuchKey: no object with this key in bucket "+b.name+" (no s3VersionId pinned: the latest version)")
	for _, sdk := range []string{"RequestID", "HostID", "https response error", "operation error"} {
		require.NotContains(t, r.stderr, sdk)
	}
	// The SDK's whole text is in executor.log at DEBUG only.
	require.Empty(t, n.find("message", "download error detail"))
	n.requireRun(3, "run", "--stage", bootstrapped, "--force", "--log-level", "debug")
	require.Contains(t, n.requireLog("level", "DEBUG", "message", "download error detail").str("error"), "RequestID")
}
