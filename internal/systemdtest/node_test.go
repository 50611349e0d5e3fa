package systemdtest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/nspawn"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/testenv"
)

// mode is how the node runs pcs-lifecycle under systemd.
type mode int

const (
	daemonMode mode = iota // pcs-lifecycle.service (the preset's default) + the slurmd drop-in
	stageMode              // pcs-lifecycle-bootstrapped.service + pcs-lifecycle-ready.service
)

func (m mode) String() string {
	if m == stageMode {
		return "per-stage"
	}
	return "daemon"
}

// The units of each mode, as the tests name them.
const (
	daemonUnit = "pcs-lifecycle.service"
	bootUnit   = "pcs-lifecycle-bootstrapped.service"
	readyUnit  = "pcs-lifecycle-ready.service"
	slurmdUnit = "slurmd.service"
)

// In the container: the folder of the test's marks (bound from the host, so the test reads
// them after the container is gone) and the CA of the script server.
const (
	marksDir = "/pcs-test"
	caPath   = "/etc/pcs-test/ca.pem"
)

// standInSlurmd stands for slurmd where the scenario needs no Slurm: a service that runs until
// stopped. The project's drop-in attaches to it as to the real one.
const standInSlurmd = `[Unit]
Description=stand-in slurmd (internal/systemdtest)

[Service]
ExecStart=/bin/sleep infinity

[Install]
WantedBy=multi-user.target
`

// node is one compute node: its scripts on a TLS server on the host's loopback, its state,
// cache and logs in host folders bound into every container it boots (so that a second boot
// is a reboot of the same instance).
type node struct {
	t     *testing.T
	mode  mode
	srv   *testenv.TLSServer
	files *testenv.Files
	dir   string // host folder: lib/, etc/, log/ (the executor's), marks/ (the scripts')

	// env are the lines of /etc/default/pcs-lifecycle (the units' EnvironmentFile).
	env []string
	// units are more units or drop-ins under the container's /etc/systemd/system.
	units map[string]string
	// keep are host units the container runs (the real slurmd).
	keep []string
	// setup are more commands run before the boot ($ROOT is the container's root).
	setup []string
	// binds are more host folders bound into the container.
	binds []string
	// slurmd is false where no slurmd.service exists (no stand-in is installed either).
	slurmd bool
	// realSlurmd keeps the host's slurmd.service instead of the stand-in.
	realSlurmd bool

	boots int
}

func newNode(t *testing.T, m mode) *node {
	t.Helper()
	files := testenv.NewFiles(nil)
	n := &node{
		t:      t,
		mode:   m,
		srv:    testenv.StartTLS(t, files),
		files:  files,
		dir:    t.TempDir(),
		units:  map[string]string{},
		slurmd: true,
	}
	for _, d := range []string{"lib", "etc", "log", "marks"} {
		require.NoError(t, os.MkdirAll(filepath.Join(n.dir, d), 0o755))
	}
	n.env = []string{
		"PCS_NODE_ID=node1",
		"PCS_CLUSTER_NAME=systemdtest",
		"PCS_INSTANCE_ID=i-" + strings.ReplaceAll(strings.ToLower(t.Name()), "/", "-"),
		"PCS_LIFECYCLE_CONFIG=" + n.srv.URL + "/config.json",
		"SSL_CERT_FILE=" + caPath,
		"AWS_EC2_METADATA_DISABLED=true",
		// No Slurm on this node unless the scenario brings one: nodeReady runs at once.
		"SLURM_CONF=/nonexistent/slurm.conf",
		"PCS_LIFECYCLE_DOWNLOAD_BACKOFF=100ms",
	}
	return n
}

// setEnv replaces (or adds) one VAR=value line of /etc/default/pcs-lifecycle.
func (n *node) setEnv(kv string) {
	name, _, _ := strings.Cut(kv, "=")
	for i, l := range n.env {
		if strings.HasPrefix(l, name+"=") {
			n.env[i] = kv
			return
		}
	}
	n.env = append(n.env, kv)
}

// script is one entry of the configuration document. Every script first appends a line to
// marks/runs: "<stage>/<name> first=<PCS_IS_FIRST_BOOT> slurmd=<systemctl is-active slurmd>",
// so the test sees what ran, in which order, on which boot, and whether slurmd was up.
type script struct {
	name, body, policy, onError string
}

func ok(name string) script { return script{name: name, body: "exit 0"} }

func (s script) every() script { s.policy = "EVERY_BOOT"; return s }

const runLine = `echo "$PCS_LIFECYCLE_STAGE/$PCS_LIFECYCLE_SCRIPT first=$PCS_IS_FIRST_BOOT slurmd=$(systemctl is-active slurmd.service)" >> ` + marksDir + "/runs\n"

// configure serves the scripts and the configuration document naming them.
func (n *node) configure(boot, ready []script) {
	n.t.Helper()
	stages := map[string]any{}
	for stage, list := range map[string][]script{"nodeBootstrapped": boot, "nodeReady": ready} {
		if len(list) == 0 {
			continue
		}
		var entries []map[string]any
		for _, s := range list {
			path := "/scripts/" + stage + "/" + s.name + ".sh"
			n.files.Set(path, []byte("#!/bin/sh\n"+runLine+s.body+"\n"))
			e := map[string]any{
				"name":         s.name,
				"scriptSource": map[string]any{"scriptLocation": n.srv.URL + path},
			}
			if s.policy != "" {
				e["executionPolicy"] = s.policy
			}
			if s.onError != "" {
				e["onError"] = s.onError
			}
			entries = append(entries, e)
		}
		stages[stage] = entries
	}
	doc, err := json.Marshal(map[string]any{"stages": stages})
	require.NoError(n.t, err)
	n.files.Set("/config.json", doc)
}

// In the container before the boot: the package and the administrator's environment file.
const (
	debInRoot = "/var/tmp/pcs-test/pcs-lifecycle.deb"
	envStaged = "/var/tmp/pcs-test/default-pcs-lifecycle"
)

// spec is the container of the node's next boot, set up as an image is built: the .deb
// installed with dpkg in the root (its postinst does nothing where systemd does not run), then
// the mode enabled as docs/install.md says: daemon mode by the preset plus the slurmd drop-in
// linked from /usr/share/pcs-lifecycle, per-stage mode by enabling its two units; then the
// administrator's /etc/default/pcs-lifecycle.
func (n *node) spec() nspawn.Spec {
	units := map[string]string{}
	for k, v := range n.units {
		units[k] = v
	}
	files := []nspawn.File{
		{Path: debInRoot, Src: debPath},
		{Path: caPath, Data: n.srv.CAPEM},
		{Path: envStaged, Data: []byte(strings.Join(n.env, "\n") + "\n")},
	}
	setup := []string{
		// --no-triggers: man-db's trigger (mandb over the whole machine) takes 30 s; the
		// container is thrown away.
		`DEBIAN_FRONTEND=noninteractive chroot "$ROOT" dpkg -i --no-triggers --force-confdef --force-confold ` + debInRoot + ` >/dev/null`,
		`cp "$ROOT` + envStaged + `" "$ROOT/etc/default/pcs-lifecycle"`,
		`systemctl --root="$ROOT" preset ` + daemonUnit + " " + bootUnit + " " + readyUnit,
	}
	if n.mode == daemonMode {
		setup = append(setup,
			`mkdir -p "$ROOT/etc/systemd/system/slurmd.service.d"`,
			`ln -s /usr/share/pcs-lifecycle/slurmd.service.d/10-pcs-lifecycle.conf "$ROOT/etc/systemd/system/slurmd.service.d/"`)
	} else {
		setup = append(setup,
			`systemctl --root="$ROOT" disable `+daemonUnit,
			`systemctl --root="$ROOT" enable `+bootUnit+" "+readyUnit)
	}
	// The units under test are never masked, also where the host has them installed.
	keep := append([]string{daemonUnit, bootUnit, readyUnit}, n.keep...)
	if n.slurmd {
		if n.realSlurmd {
			keep = append(keep, slurmdUnit)
		} else {
			units[slurmdUnit] = standInSlurmd
		}
		setup = append(setup, `systemctl --root="$ROOT" enable `+slurmdUnit)
	}
	return nspawn.Spec{
		Units: units,
		Files: files,
		Keep:  keep,
		Setup: append(setup, n.setup...),
		Binds: append([]string{
			filepath.Join(n.dir, "lib") + ":/var/lib/amazon/pcs",
			filepath.Join(n.dir, "etc") + ":/etc/amazon/pcs",
			filepath.Join(n.dir, "log") + ":/var/log/amazon/pcs",
			filepath.Join(n.dir, "marks") + ":" + marksDir,
		}, n.binds...),
	}
}

// boot boots the node (again: the state of earlier boots is kept) and records how long the
// container took to answer.
func (n *node) boot(ctx context.Context) *nspawn.Container {
	n.t.Helper()
	n.boots++
	c := nspawn.Boot(ctx, n.t, n.spec())
	record(n.t, fmt.Sprintf("boot %d: root prepared (overlay, dpkg -i, units)", n.boots), c.Prepared)
	record(n.t, fmt.Sprintf("boot %d: container started, systemd answers", n.boots), c.Booted)
	return c
}

// poweroff shuts the container down and records how long it took.
func (n *node) poweroff(ctx context.Context, c *nspawn.Container) {
	n.t.Helper()
	d, err := c.Poweroff(ctx)
	require.NoError(n.t, err)
	record(n.t, fmt.Sprintf("poweroff %d", n.boots), d)
}

// runs are the lines the scripts appended to marks/runs, in order.
func (n *node) runs() []string {
	data, err := os.ReadFile(filepath.Join(n.dir, "marks", "runs"))
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(n.t, err)
	return strings.Split(strings.TrimSpace(string(data)), "\n")
}

// executorLog is executor.log (JSON lines) as the host sees it through the bind.
func (n *node) executorLog() string {
	data, err := os.ReadFile(filepath.Join(n.dir, "log", "lifecycle", "actions", "executor.log"))
	require.NoError(n.t, err)
	return string(data)
}

// scriptLog is a script's own log.
func (n *node) scriptLog(stage, name string) string {
	data, err := os.ReadFile(filepath.Join(n.dir, "log", "lifecycle", "actions", stage, name+".log"))
	require.NoError(n.t, err)
	return string(data)
}

// scenarioLimit bounds one scenario (each takes seconds): a hung one fails with its journal
// and its container cleaned up instead of running into the test binary's timeout.
const scenarioLimit = 3 * time.Minute

// testContext is the test's context: it ends after scenarioLimit, or a minute before the
// test binary's deadline if that comes first.
func testContext(t *testing.T) context.Context {
	end := time.Now().Add(scenarioLimit)
	if d, ok := t.Deadline(); ok && d.Add(-time.Minute).Before(end) {
		end = d.Add(-time.Minute)
	}
	ctx, cancel := context.WithDeadline(context.Background(), end)
	t.Cleanup(cancel)
	return ctx
}
