package reliability

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/testenv"
	"github.com/pcs-lifecycle/pcs-lifecycle/pkg/lifecycle"
)

// victim is a file outside the node that a planted link points to.
type victim struct {
	path    string
	content []byte
}

func newVictim(t *testing.T, n *node) victim {
	t.Helper()
	v := victim{path: filepath.Join(n.work, "victim"), content: []byte("precious, must stay as it is\n")}
	if err := os.WriteFile(v.path, v.content, 0o644); err != nil {
		t.Fatal(err)
	}
	return v
}

func (v victim) check(t *testing.T) {
	t.Helper()
	got, err := os.ReadFile(v.path)
	if err != nil || !bytes.Equal(got, v.content) {
		t.Errorf("the link's target %s was written through: %q (%v)", v.path, got, err)
	}
	if fi, err := os.Stat(v.path); err == nil && fi.Mode().Perm() != 0o644 {
		t.Errorf("the link's target %s was chmod'ed to %04o", v.path, fi.Mode().Perm())
	}
}

// plant replaces path by a symlink to target (removing what was there).
func plant(t *testing.T, path, target string) {
	t.Helper()
	if err := os.RemoveAll(path); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
}

// hostileNode is a node whose first boot ran one EVERY_BOOT script ("guarded", CACHE_ONCE)
// from the TLS server, so that cache, state and logs all exist.
type hostileNode struct {
	*node
	files  *testenv.Files
	cfg    string
	marker string
}

func newHostileNode(t *testing.T, onError lifecycle.OnError) *hostileNode {
	t.Helper()
	n := newNode(t, "hostile")
	marker := filepath.Join(n.work, "markers")
	files := testenv.NewFiles(map[string][]byte{"/guarded.sh": markerScript(marker, "")})
	srv := testenv.StartTLS(t, files)
	n.setenv("SSL_CERT_FILE", srv.CAFile)
	cfg := n.writeConfig(document(lifecycle.CacheOnce, []lifecycle.Script{
		script("guarded", srv.URL+"/guarded.sh", lifecycle.EveryBoot, onError)}, nil))
	h := &hostileNode{node: n, files: files, cfg: cfg, marker: marker}
	if r := n.run("run", "--stage", "nodeBootstrapped", "--config", cfg); r.code != 0 {
		t.Fatalf("first boot: %s", r)
	}
	n.reboot()
	return h
}

func (h *hostileNode) runs() int { return readMarkers(h.marker).starts["guarded"] }

// TestSymlinksPlanted plants a symlink (or a hard link) at each path the executor writes:
// nothing is ever written or chmod'ed through it, and the refusal is reported.
func TestSymlinksPlanted(t *testing.T) {
	t.Parallel()
	type tc struct {
		name string
		// path returns where to plant, on a node after its first boot.
		path func(h *hostileNode) string
		dir  bool // plant a directory symlink (to an empty directory)
		// want: the run's exit code; ""=any non-zero.
		wantExit int
	}
	l := func(f func(h *hostileNode) string) func(h *hostileNode) string { return f }
	cases := []tc{
		{"executor.log", l(func(h *hostileNode) string { return h.layout.ExecutorLog() }), false, 1},
		{"script-log", l(func(h *hostileNode) string { return h.layout.ScriptLog("nodeBootstrapped", "guarded") }), false, 1},
		{"stage-log-dir", l(func(h *hostileNode) string { return h.layout.StageLogDir("nodeBootstrapped") }), true, 1},
		{"state.json", l(func(h *hostileNode) string { return h.layout.StateFile() }), false, 1},
		{"state.journal", l(func(h *hostileNode) string { return h.layout.JournalFile() }), false, 1},
		{"lock", l(func(h *hostileNode) string { return h.layout.LockFile() }), false, 1},
		{"state-dir", l(func(h *hostileNode) string { return h.layout.StateDir() }), true, 1},
		{"cached-script", l(func(h *hostileNode) string { return h.layout.CachedScript("guarded") }), false, 3},
		{"scripts-dir", l(func(h *hostileNode) string { return h.layout.ScriptsDir() }), true, 3},
		{"cached-config", l(func(h *hostileNode) string { return h.layout.CachedConfig() }), false, -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h := newHostileNode(t, lifecycle.Continue)
			v := newVictim(t, h.node)
			target := v.path
			if c.dir {
				target = filepath.Join(h.work, "victim-dir")
				if err := os.Mkdir(target, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			p := c.path(h)
			plant(t, p, target)
			before := h.runs()
			r := h.run("run", "--stage", "nodeBootstrapped")
			v.check(t)
			if c.dir {
				if ents, _ := os.ReadDir(target); len(ents) > 0 {
					t.Errorf("files were written through the directory link: %v", ents)
				}
				if fi, _ := os.Stat(target); fi != nil && fi.Mode().Perm() != 0o755 {
					t.Errorf("the linked directory was chmod'ed to %04o", fi.Mode().Perm())
				}
			}
			if fi, err := os.Lstat(p); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
				// Replacing the link is acceptable for files written by rename (the target is
				// untouched); say so in the log.
				t.Logf("%s: the link was replaced (%v)", c.name, err)
			}
			switch {
			case c.wantExit == -1 && r.code == 0:
				t.Fatalf("planted %s: the run succeeded: %s", c.name, r)
			case c.wantExit >= 0 && r.code != c.wantExit:
				t.Fatalf("planted %s: want exit %d: %s", c.name, c.wantExit, r)
			}
			if c.wantExit == 1 && h.runs() != before {
				t.Errorf("a script ran although the executor could not record or log it")
			}
			if c.wantExit == 3 && h.runs() != before {
				t.Errorf("the cached script ran through a planted link")
			}
			said := strings.Contains(r.stderr, "symlink") || strings.Contains(readFile(h.layout.ExecutorLog()), "symlink")
			if c.name == "cached-config" {
				mustHold(t, said, "a cached configuration replaced by a symlink is reported as \"no configuration: this is the first run\" (cli.loadConfig treats cache.Config's TamperedError as no cached copy): "+strings.TrimSpace(r.stderr))
			} else if !said {
				t.Errorf("planted %s: the refusal names no symlink: %s", c.name, r)
			}
		})
	}
	t.Run("hard-link-at-script-log", func(t *testing.T) {
		t.Parallel()
		h := newHostileNode(t, lifecycle.Continue)
		v := newVictim(t, h.node)
		p := h.layout.ScriptLog("nodeBootstrapped", "guarded")
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
		if err := os.Link(v.path, p); err != nil {
			t.Fatal(err)
		}
		r := h.run("run", "--stage", "nodeBootstrapped")
		v.check(t)
		if r.code != 1 || !strings.Contains(r.stderr, "hard link") {
			t.Errorf("a hard link at a script log: want exit 1 naming it: %s", r)
		}
	})
	t.Run("hard-link-at-executor-log", func(t *testing.T) {
		t.Parallel()
		h := newHostileNode(t, lifecycle.Continue)
		v := newVictim(t, h.node)
		p := h.layout.ExecutorLog()
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
		if err := os.Link(v.path, p); err != nil {
			t.Fatal(err)
		}
		r := h.run("run", "--stage", "nodeBootstrapped")
		v.check(t)
		if r.code != 1 || !strings.Contains(r.stderr, "hard link") {
			t.Errorf("a hard link at executor.log: want exit 1 naming it: %s", r)
		}
	})
	t.Run("status-refuses-symlinked-state", func(t *testing.T) {
		t.Parallel()
		h := newHostileNode(t, lifecycle.Continue)
		v := newVictim(t, h.node)
		plant(t, h.layout.StateFile(), v.path)
		r := h.runWithin(30_000_000_000, "status", "--json")
		if r.code != 1 || !strings.Contains(r.stderr, "symlink") {
			t.Errorf("status over a planted state.json: want exit 1 naming the symlink: %s", r)
		}
	})
}

// TestNothingOutsideItsDirectory: names that try to leave their directory are refused by
// validation; locations and arguments that look like paths change nothing about where files
// go. After a run, every file under the root is in one of the executor's directories and
// nothing was created beside the root.
func TestNothingOutsideItsDirectory(t *testing.T) {
	t.Parallel()
	n := newNode(t, "paths")
	for _, name := range []string{"../escape", "a/b", ".hidden", "..", "x\x00y", "/abs", "a\\b", "~root"} {
		js, _ := json.Marshal(name)
		doc := fmt.Sprintf(`{"stages":{"nodeBootstrapped":[{"name":%s,"scriptSource":{"scriptLocation":"https://127.0.0.1/x.sh"}}]}}`, js)
		p := filepath.Join(n.work, "bad.json")
		if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		r := n.runWithin(30_000_000_000, "validate", p)
		if r.code != 2 || !strings.Contains(r.stdout+r.stderr, "stages.nodeBootstrapped[0].name") {
			t.Errorf("name %q: want exit 2 naming stages.nodeBootstrapped[0].name: %s", name, r)
		}
	}
	marker := filepath.Join(n.work, "markers")
	body := markerScript(marker, "")
	files := testenv.NewFiles(map[string][]byte{
		"/a/../../../../../../tmp/escape.sh": body,
		"/../../x.sh":                        body, // the server's decoded form of /%2e%2e/%2e%2e/x.sh
		"/plain.sh":                          body,
	})
	srv := testenv.StartTLS(t, files)
	n.setenv("SSL_CERT_FILE", srv.CAFile)
	cfg := n.writeConfig(document(lifecycle.CacheOnce, []lifecycle.Script{
		script("dots", srv.URL+"/a/../../../../../../tmp/escape.sh", lifecycle.FirstBootOnly, lifecycle.Continue, "../../../../etc/passwd", "/tmp/x"),
		script("encoded", srv.URL+"/%2e%2e/%2e%2e/x.sh", lifecycle.FirstBootOnly, lifecycle.Continue),
		script("with spaces  and-dashes", srv.URL+"/plain.sh", lifecycle.FirstBootOnly, lifecycle.Continue),
	}, nil))
	siblings := dirNames(t, filepath.Dir(n.root))
	r := n.run("run", "--stage", "nodeBootstrapped", "--config", cfg)
	if r.code != 0 && r.code != 3 {
		t.Fatalf("run: %s", r)
	}
	if got := dirNames(t, filepath.Dir(n.root)); strings.Join(got, ",") != strings.Join(siblings, ",") {
		t.Errorf("files appeared beside the root: %v -> %v", siblings, got)
	}
	allowed := []string{n.layout.ConfigDir(), n.layout.StateDir(), n.layout.LogDir()}
	_ = filepath.WalkDir(n.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		for _, a := range allowed {
			if strings.HasPrefix(p, a+string(filepath.Separator)) {
				return nil
			}
		}
		t.Errorf("a file outside the executor's directories: %s", p)
		return nil
	})
	for _, name := range []string{"dots", "encoded", "with spaces  and-dashes"} {
		if _, err := os.Stat(n.layout.CachedScript(name)); err != nil {
			t.Errorf("cached copy of %q is not at its name: %v", name, err)
		}
		if _, err := os.Stat(n.layout.ScriptLog("nodeBootstrapped", name)); err != nil {
			t.Errorf("log of %q is not at its name: %v", name, err)
		}
	}
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out
}

// TestModesUnderPermissiveUmask runs the executor under umask 000, over directories and
// files an earlier, careless hand left world-writable: every directory and file ends with the
// SPEC's mode, and scripts run under umask 022.
func TestModesUnderPermissiveUmask(t *testing.T) {
	t.Parallel()
	n := newNode(t, "modes")
	umaskOut := filepath.Join(n.work, "umask")
	files := testenv.NewFiles(map[string][]byte{"/u.sh": []byte("#!/bin/sh\numask > " + shellQuote(umaskOut) + "\n")})
	srv := testenv.StartTLS(t, files)
	n.setenv("SSL_CERT_FILE", srv.CAFile)
	cfg := n.writeConfig(document(lifecycle.CacheOnce, []lifecycle.Script{
		script("u", srv.URL+"/u.sh", lifecycle.EveryBoot, lifecycle.Terminate)}, nil))
	// Leftovers of a careless image: world-writable directories and log file.
	for _, d := range []string{n.layout.LogDir(), n.layout.StageLogDir("nodeBootstrapped"), n.layout.StateDir(), n.layout.ConfigDir()} {
		if err := os.MkdirAll(d, 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(n.layout.ExecutorLog(), nil, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(n.layout.ExecutorLog(), 0o666); err != nil {
		t.Fatal(err)
	}
	for boot := 0; boot < 2; boot++ {
		args := []string{"run", "--stage", "nodeBootstrapped", "--config", cfg, "--root", n.root, "--instance-id", n.instance, "--boot-id", n.bootID()}
		cmd := exec.Command("/bin/sh", append([]string{"-c", `umask 000; exec "$0" "$@"`, exe}, args...)...)
		cmd.Env = n.environ()
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("run under umask 000: %v\n%s", err, out)
		}
		want := map[string]os.FileMode{
			n.layout.LogDir():                                 0o750,
			n.layout.StageLogDir("nodeBootstrapped"):          0o750,
			n.layout.ExecutorLog():                            0o640,
			n.layout.ScriptLog("nodeBootstrapped", "u"):       0o640,
			n.layout.ConfigDir():                              0o700,
			n.layout.ScriptsDir():                             0o700,
			n.layout.CachedScript("u"):                        0o700,
			n.layout.CachedConfig():                           0o600,
			n.layout.StateDir():                               0o700,
			n.layout.StateFile():                              0o600,
			n.layout.JournalFile():                            0o600,
			n.layout.LockFile():                               0o600,
			filepath.Dir(n.layout.LogDir()):                   0o755,
			filepath.Join(n.root, "var/lib/amazon/pcs"):       0o755,
			filepath.Join(n.root, "etc/amazon/pcs/lifecycle"): 0o755,
		}
		for p, m := range want {
			fi, err := os.Lstat(p)
			if err != nil {
				t.Errorf("%s: %v", p, err)
				continue
			}
			if fi.Mode().Perm() != m {
				t.Errorf("%s: mode %04o, want %04o", strings.TrimPrefix(p, n.root), fi.Mode().Perm(), m)
			}
			if st := fi.Sys().(*syscall.Stat_t); st.Uid != uint32(os.Geteuid()) {
				t.Errorf("%s: owned by uid %d", p, st.Uid)
			}
		}
		if u := strings.TrimSpace(readFile(umaskOut)); u != "0022" {
			t.Errorf("scripts run under umask %q, want 0022", u)
		}
		n.reboot()
	}
}

// TestCacheTampering changes the cached script after the first boot in the ways a local
// attacker could: group- or world-writable, another owner, other content, a symlink. The
// next boot refuses to run it, does not download it again behind the operator's back
// (CACHE_ONCE), applies onError and says why at ERROR.
func TestCacheTampering(t *testing.T) {
	t.Parallel()
	tamper := map[string]func(t *testing.T, p string){
		"group-writable": func(t *testing.T, p string) { chmod(t, p, 0o720) },
		"world-writable": func(t *testing.T, p string) { chmod(t, p, 0o702) },
		"other-owner": func(t *testing.T, p string) {
			if err := os.Chown(p, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		},
		"other-content": func(t *testing.T, p string) {
			f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = f.WriteString("echo injected\n")
			f.Close()
		},
	}
	for name, fn := range tamper {
		for _, onError := range []lifecycle.OnError{lifecycle.Continue, lifecycle.Terminate} {
			t.Run(name+"/"+strings.ToLower(string(onError)), func(t *testing.T) {
				t.Parallel()
				h := newHostileNode(t, onError)
				reqs := h.files.TotalRequests()
				p := h.layout.CachedScript("guarded")
				fn(t, p)
				r := h.run("run", "--stage", "nodeBootstrapped")
				want := map[lifecycle.OnError]int{lifecycle.Continue: 3, lifecycle.Terminate: 4}[onError]
				if r.code != want {
					t.Fatalf("tampered cache (%s): want exit %d: %s", name, want, r)
				}
				if h.runs() != 1 {
					t.Errorf("the tampered script ran")
				}
				if got := h.files.TotalRequests(); got != reqs {
					t.Errorf("CACHE_ONCE: the tampered script was downloaded again (%d requests)", got-reqs)
				}
				if !h.logHas("ERROR", "guarded", "cached|refus|verification") {
					t.Errorf("no ERROR line names the tampered cache")
				}
				if sc := findScript(t, h.status(), "nodeBootstrapped", "guarded"); sc.ThisBoot != "download_failed" {
					t.Errorf("status this boot %q, want download_failed", sc.ThisBoot)
				}
			})
		}
	}
	for _, c := range []struct {
		name string
		fn   func(t *testing.T, p string)
	}{
		{"config-group-writable", func(t *testing.T, p string) { chmod(t, p, 0o660) }},
		{"config-other-owner", func(t *testing.T, p string) {
			if err := os.Chown(p, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}},
		{"config-other-content", func(t *testing.T, p string) {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, bytes.Replace(b, []byte("EVERY_BOOT"), []byte("FIRST_BOOT_ONLY"), 1), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h := newHostileNode(t, lifecycle.Continue)
			c.fn(t, h.layout.CachedConfig())
			r := h.run("run", "--stage", "nodeBootstrapped")
			if r.code == 0 {
				t.Fatalf("a tampered cached configuration was used: %s", r)
			}
			if h.runs() != 1 {
				t.Errorf("a script ran from a tampered configuration")
			}
			named := strings.Contains(r.stderr, "changed on disk") || strings.Contains(r.stderr, "writable") ||
				strings.Contains(r.stderr, "owned by") || strings.Contains(r.stderr, "refus")
			if c.name == "config-other-content" {
				if !named {
					t.Errorf("the refusal does not say why: %s", r)
				}
				return
			}
			mustHold(t, named, "a cached configuration that is group-writable or owned by another user is refused, but the message says \"no configuration: this is the first run\" (cli.loadConfig treats cache.Config's TamperedError as no cached copy; with --config it would silently replace it): "+strings.TrimSpace(r.stderr))
		})
	}
}

func chmod(t *testing.T, p string, m os.FileMode) {
	t.Helper()
	if err := os.Chmod(p, m); err != nil {
		t.Fatal(err)
	}
}

// TestCallerEnvironmentNeverLeaks runs scripts (with and without "#!", bash and sh) from an
// executor whose own environment holds credentials, loader and shell start-up variables and
// attempts to override the PCS_* variables: each script sees exactly the SPEC's environment.
func TestCallerEnvironmentNeverLeaks(t *testing.T) {
	t.Parallel()
	n := newNode(t, "env")
	bashEnvHit := filepath.Join(n.work, "bash-env-sourced")
	evilRC := filepath.Join(n.work, "evil-rc.sh")
	if err := os.WriteFile(evilRC, []byte("touch "+shellQuote(bashEnvHit)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	secrets := map[string]string{
		"SECRET_TOKEN":        "leaked-secret-2",
		"LD_PRELOAD":          "/nonexistent/leaked-preload.so",
		"LD_LIBRARY_PATH":     "/nonexistent/leaked-libpath",
		"BASH_ENV":            evilRC,
		"ENV":                 evilRC,
		"SHELLOPTS":           "xtrace",
		"PS4":                 "leaked-ps4 ",
		"IFS":                 "leaked",
		"TMPDIR":              "/nonexistent/leaked-tmp",
		"PCS_IS_FIRST_BOOT":   "leaked-first-boot",
		"PCS_LIFECYCLE_STAGE": "leaked-stage",
		"HOME":                "/nonexistent/leaked-home",
		"LANG":                "leaked-lang",
		"PATH":                "/nonexistent/leaked-path:/usr/bin:/bin",
		"NO_PROXY":            "example.invalid",
		"no_proxy":            "example.invalid",
		"SLURM_CONF":          "/etc/slurm/passed-through.conf",
	}
	for k, v := range secrets {
		n.setenv(k, v)
	}
	outDir := filepath.Join(n.work, "env")
	if err := os.Mkdir(outDir, 0o755); err != nil {
		t.Fatal(err)
	}
	dump := func(name string) string { return filepath.Join(outDir, name) }
	files := testenv.NewFiles(map[string][]byte{
		"/sh.sh":    []byte("#!/bin/sh\nenv -0 > " + shellQuote(dump("sh")) + "\n"),
		"/bash.sh":  []byte("#!/bin/bash\nenv -0 > " + shellQuote(dump("bash")) + "\n"),
		"/plain.sh": []byte("env -0 > " + shellQuote(dump("plain")) + "\n"),
	})
	srv := testenv.StartTLS(t, files)
	n.setenv("SSL_CERT_FILE", srv.CAFile)
	srvS3, bucket := s3Scripts(t, map[string][]byte{"s3.sh": []byte("#!/bin/sh\nenv -0 > " + shellQuote(dump("s3")) + "\n")})
	n.useS3(srvS3.Endpoint) // the executor itself needs its credentials; scripts must not see them
	cfg := n.writeConfig(document(lifecycle.CacheOnce, []lifecycle.Script{
		script("sh", srv.URL+"/sh.sh", lifecycle.FirstBootOnly, lifecycle.Terminate),
		script("bash", srv.URL+"/bash.sh", lifecycle.FirstBootOnly, lifecycle.Terminate),
		script("plain", srv.URL+"/plain.sh", lifecycle.FirstBootOnly, lifecycle.Terminate),
		script("s3", "s3://"+bucket+"/s3.sh", lifecycle.FirstBootOnly, lifecycle.Terminate),
	}, nil))
	r := n.run("run", "--stage", "nodeBootstrapped", "--config", cfg)
	if r.code != 0 {
		t.Fatalf("run: %s", r)
	}
	allowed := map[string]bool{"PATH": true, "HOME": true, "LANG": true, "PCS_CLUSTER_ID": true, "PCS_CLUSTER_NAME": true,
		"PCS_COMPUTE_NODE_GROUP_ID": true, "PCS_COMPUTE_NODE_GROUP_NAME": true, "PCS_NODE_ID": true, "PCS_IS_FIRST_BOOT": true,
		"PCS_LIFECYCLE_STAGE": true, "PCS_LIFECYCLE_SCRIPT": true, "PCS_INSTANCE_ID": true, "AWS_REGION": true,
		"NO_PROXY": true, "no_proxy": true, "SLURM_CONF": true,
		// set by the shells themselves
		"PWD": true, "SHLVL": true, "_": true, "OLDPWD": true}
	for _, name := range []string{"sh", "bash", "plain", "s3"} {
		raw, err := os.ReadFile(dump(name))
		if err != nil {
			t.Errorf("%s: no environment dump: %v", name, err)
			continue
		}
		env := map[string]string{}
		for _, kv := range strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00") {
			k, v, _ := strings.Cut(kv, "=")
			env[k] = v
			if !allowed[k] {
				t.Errorf("%s: unexpected variable %s=%q reached the script", name, k, v)
			}
			if strings.Contains(v, "leaked") || strings.Contains(v, testenv.S3SecretKey) || strings.Contains(v, testenv.S3AccessKey) {
				t.Errorf("%s: %s carries the caller's value %q", name, k, v)
			}
		}
		wantVals := map[string]string{"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root",
			"LANG": "C.UTF-8", "PCS_IS_FIRST_BOOT": "1", "PCS_LIFECYCLE_STAGE": "nodeBootstrapped", "PCS_LIFECYCLE_SCRIPT": name,
			"PCS_INSTANCE_ID": n.instance, "NO_PROXY": "example.invalid", "SLURM_CONF": "/etc/slurm/passed-through.conf"}
		for k, v := range wantVals {
			if env[k] != v {
				t.Errorf("%s: %s=%q, want %q", name, k, env[k], v)
			}
		}
	}
	if _, err := os.Stat(bashEnvHit); err == nil {
		t.Errorf("BASH_ENV/ENV of the caller was sourced by a script")
	}
	if log := n.scriptLog("nodeBootstrapped", "sh"); strings.Contains(log, "leaked") || strings.Contains(log, "preload") {
		t.Errorf("the caller's loader variables reached a script: %s", log)
	}
}

// TestArgumentsNeverShellInterpreted passes shell metacharacters, quotes, blanks, newlines,
// option-looking and empty arguments to a "#!" script and to one without "#!" (run by
// /bin/sh FILE ARGS): each arrives byte for byte as one positional parameter, nothing is
// executed, and the log's start line shows them as a JSON array.
func TestArgumentsNeverShellInterpreted(t *testing.T) {
	t.Parallel()
	n := newNode(t, "args")
	pw := func(i int) string { return filepath.Join(n.work, fmt.Sprintf("pwned%d", i)) }
	args := []string{
		"$(touch " + pw(1) + ")",
		"`touch " + pw(2) + "`",
		"; touch " + pw(3),
		"| touch " + pw(4),
		"&& touch " + pw(5),
		"> " + pw(6),
		"a b  c\tsp",
		"line1\nline2",
		"*",
		"?[a-z]",
		"~",
		"$HOME ${PATH} $((1+1))",
		`'single' "double" \back`,
		"",
		"-e",
		"--",
		"ünïcödé ✓",
		strings.Repeat("x", 256),
		"%s%n%x",
		"$IFS",
	}
	outShebang, outPlain := filepath.Join(n.work, "args-shebang"), filepath.Join(n.work, "args-plain")
	printer := func(out string) string {
		return `printf '%s\0' "$#" > ` + shellQuote(out) + "\n" + `for a in "$@"; do printf '%s\0' "$a" >> ` + shellQuote(out) + "; done\n"
	}
	files := testenv.NewFiles(map[string][]byte{
		"/shebang.sh": []byte("#!/bin/sh\n" + printer(outShebang)),
		"/plain.sh":   []byte(printer(outPlain)),
	})
	srv := testenv.StartTLS(t, files)
	n.setenv("SSL_CERT_FILE", srv.CAFile)
	cfg := n.writeConfig(document(lifecycle.CacheOnce, []lifecycle.Script{
		script("shebang", srv.URL+"/shebang.sh", lifecycle.FirstBootOnly, lifecycle.Terminate, args...),
		script("plain", srv.URL+"/plain.sh", lifecycle.FirstBootOnly, lifecycle.Terminate, args...),
	}, nil))
	if r := n.run("run", "--stage", "nodeBootstrapped", "--config", cfg); r.code != 0 {
		t.Fatalf("run: %s", r)
	}
	want := append([]string{fmt.Sprint(len(args))}, args...)
	for _, out := range []string{outShebang, outPlain} {
		got := strings.Split(strings.TrimSuffix(readFile(out), "\x00"), "\x00")
		if strings.Join(got, "\x00") != strings.Join(want, "\x00") {
			t.Errorf("%s: arguments arrived as %q, want %q", filepath.Base(out), got, want)
		}
	}
	for i := 1; i <= 6; i++ {
		if _, err := os.Stat(pw(i)); err == nil {
			t.Errorf("argument %d was interpreted by a shell", i)
		}
	}
	js, _ := json.Marshal(args)
	for _, name := range []string{"shebang", "plain"} {
		if !strings.Contains(n.scriptLog("nodeBootstrapped", name), "[start "+name+" args="+string(js)+" @ ") {
			t.Errorf("%s: the log's start line does not show the arguments as %s", name, js)
		}
	}
}

// TestExpectedBucketOwner: --expected-bucket-owner (and its environment variable) reaches S3
// as the x-amz-expected-bucket-owner header of every GetObject, for scripts and for an s3://
// configuration, read on the wire through the proxy; versitygw enforces it, so the bucket
// owner's account passes and any other account is refused with 403 (a download failure).
// Without the option no such header is sent.
func TestExpectedBucketOwner(t *testing.T) {
	t.Parallel()
	owner := testenv.S3AccessKey // versitygw's account ID of the root account that owns the buckets
	for _, c := range []struct {
		name   string
		flag   string
		env    string
		header string
		ok     bool
	}{
		{"flag", owner, "", owner, true},
		{"env", "", owner, owner, true},
		{"flag-over-env", owner, "111122223333", owner, true},
		{"none", "", "", "", true},
		{"wrong-owner-config", "111122223333", "", "111122223333", false},
		{"wrong-owner-script", "", "", "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := s3Backend(t, testenv.FaultOptions{})
			n := newNode(t, "owner")
			b.setup(n)
			marker := filepath.Join(n.work, "markers")
			b.put("owner/s.sh", markerScript(marker, ""))
			doc := document(lifecycle.CacheOnce, []lifecycle.Script{
				script("s", b.location("owner/s.sh"), lifecycle.FirstBootOnly, lifecycle.Continue)}, nil)
			b.put("owner/config.json", doc.Marshal())
			if c.env != "" {
				n.setenv("PCS_LIFECYCLE_EXPECTED_BUCKET_OWNER", c.env)
			}
			config := b.location("owner/config.json")
			if c.name == "wrong-owner-script" {
				// The configuration comes from a file; only the script is fetched with the
				// wrong owner.
				config = n.writeConfig(doc)
				c.flag, c.header = "111122223333", "111122223333"
			}
			args := []string{"run", "--stage", "nodeBootstrapped", "--config", config}
			if c.flag != "" {
				args = append(args, "--expected-bucket-owner", c.flag)
			}
			r := n.run(args...)
			ran := readMarkers(marker).ends["s"] == 1
			reqs := b.proxy.Requests("/owner/")
			for _, q := range reqs {
				if got := q.Header.Get("X-Amz-Expected-Bucket-Owner"); got != c.header {
					t.Errorf("%s %s: x-amz-expected-bucket-owner %q, want %q", q.Method, q.Path, got, c.header)
				}
			}
			switch {
			case c.ok:
				if r.code != 0 || !ran || len(reqs) < 2 {
					t.Fatalf("bucket owner %q: want the configuration and the script fetched and run (%d requests): %s", c.header, len(reqs), r)
				}
			case c.name == "wrong-owner-config":
				if r.code != 2 || ran || !strings.Contains(r.stderr, "403") {
					t.Fatalf("configuration from a bucket of another owner: want exit 2 with the 403: %s", r)
				}
			default:
				if r.code != 3 || ran {
					t.Fatalf("script from a bucket of another owner: want it not run, exit 3 (CONTINUE): %s", r)
				}
				if sc := findScript(t, n.status(), "nodeBootstrapped", "s"); sc.ThisBoot != "download_failed" {
					t.Errorf("this boot %q, want download_failed", sc.ThisBoot)
				}
			}
		})
	}
}
