package systemdtest_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/nspawn"
)

// TestDaemonBootAndReboot: daemon mode, first boot then a reboot of the same instance. slurmd
// starts only after nodeBootstrapped, nodeReady runs with slurmd up, the unit ends active
// (exited) with status 0, the system is running (not degraded), and a later
// `systemctl restart slurmd` does not start the boot sequence again. The reboot runs only the
// EVERY_BOOT scripts, with PCS_IS_FIRST_BOOT=0.
func TestDaemonBootAndReboot(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	n := newNode(t, daemonMode)
	n.configure(
		[]script{ok("first-only"), ok("every-boot").every()},
		[]script{ok("ready-every").every()},
	)

	start := time.Now()
	c := n.boot(ctx)
	d := c.WaitUnit(ctx, daemonUnit, nspawn.Ended)
	record(t, "first boot: boot to the daemon's end", time.Since(start))
	// The node runs what the .deb installed, enabled by its preset.
	require.Equal(t, "install ok installed", c.MustRun(ctx, "dpkg-query", "-W", "-f", "${Status}", "pcs-lifecycle"))
	require.Equal(t, "enabled\n", c.MustRun(ctx, "systemctl", "is-enabled", daemonUnit))
	require.Contains(t, c.MustRun(ctx, "systemctl", "show", "-p", "FragmentPath", daemonUnit), "lib/systemd/system/pcs-lifecycle.service")
	require.Equal(t, "active/exited", d.ActiveState+"/"+d.SubState, "%v", d)
	require.Equal(t, 0, d.ExecMainStatus, "%v", d)
	require.Equal(t, "done: exit 0", d.StatusText)
	requireSystem(t, ctx, c, "running")
	s := c.MustShow(ctx, slurmdUnit)
	require.Equal(t, "active/running", s.ActiveState+"/"+s.SubState, "%v", s)
	require.Equal(t, []string{
		"nodeBootstrapped/first-only first=1 slurmd=inactive",
		"nodeBootstrapped/every-boot first=1 slurmd=inactive",
		"nodeReady/ready-every first=1 slurmd=active",
	}, n.runs())

	// The journal of the unit: systemd's own lines and the daemon's.
	j := c.Journal(ctx, "-u", daemonUnit)
	t.Logf("journalctl -u %s:\n%s", daemonUnit, j)
	assert.Contains(t, j, "Starting pcs-lifecycle.service")
	assert.Contains(t, j, "Started pcs-lifecycle.service")
	assert.NotContains(t, j, "Deactivated successfully", "the unit must stay active (exited)")
	// Progress, with stage and script (stderr is the journal: INFO lines go there too).
	for _, l := range []journalLine{
		{"INFO", "starting script", "nodeBootstrapped", "first-only"},
		{"INFO", "script completed", "nodeBootstrapped", "first-only"},
		{"INFO", "starting script", "nodeBootstrapped", "every-boot"},
		{"INFO", "starting script", "nodeReady", "ready-every"},
		{"INFO", "script completed", "nodeReady", "ready-every"},
	} {
		assert.True(t, l.in(j), "journal: no %+v", l)
	}
	// slurmd started after READY=1 (ordering: the journal of both units, in order).
	both := c.Journal(ctx, "-u", daemonUnit, "-u", slurmdUnit)
	iReady := strings.Index(both, "Started pcs-lifecycle.service")
	iSlurmd := strings.Index(both, "Started slurmd.service")
	require.Greater(t, iSlurmd, iReady, "slurmd started before READY=1:\n%s", both)
	record(t, "READY=1 (pcs-lifecycle started) to slurmd started", journalTime(t, both, "Started slurmd.service").Sub(journalTime(t, both, "Started pcs-lifecycle.service")))

	// A later restart of slurmd does not run the daemon again (RemainAfterExit=yes).
	_, err := c.Systemctl(ctx, "restart", slurmdUnit)
	require.NoError(t, err)
	after := c.MustShow(ctx, daemonUnit)
	require.Equal(t, d.InvocationID, after.InvocationID, "restarting slurmd started the daemon again")
	require.Equal(t, "active/exited", after.ActiveState+"/"+after.SubState)
	require.Equal(t, "active/running", func() string { s := c.MustShow(ctx, slurmdUnit); return s.ActiveState + "/" + s.SubState }())
	require.Len(t, n.runs(), 3, "a script ran again")
	// An explicit stop of the finished unit stops slurmd with it (the drop-in's Requires=).
	_, err = c.Systemctl(ctx, "stop", daemonUnit)
	require.NoError(t, err)
	require.Equal(t, "inactive/dead", state(c.MustShow(ctx, slurmdUnit)), "slurmd survived a stop of pcs-lifecycle.service")
	n.poweroff(ctx, c)

	// The reboot: the same instance, a new boot.
	start = time.Now()
	c = n.boot(ctx)
	d = c.WaitUnit(ctx, daemonUnit, nspawn.Ended)
	record(t, "reboot: boot to the daemon's end", time.Since(start))
	require.Equal(t, "active/exited", d.ActiveState+"/"+d.SubState, "%v", d)
	require.Equal(t, 0, d.ExecMainStatus)
	requireSystem(t, ctx, c, "running")
	j = c.Journal(ctx, "-u", daemonUnit)
	assert.True(t, journalLine{"INFO", "skipping script", "nodeBootstrapped", "first-only"}.in(j), "the reboot's journal says first-only was skipped:\n%s", j)
	require.Equal(t, []string{
		"nodeBootstrapped/first-only first=1 slurmd=inactive",
		"nodeBootstrapped/every-boot first=1 slurmd=inactive",
		"nodeReady/ready-every first=1 slurmd=active",
		"nodeBootstrapped/every-boot first=0 slurmd=inactive",
		"nodeReady/ready-every first=0 slurmd=active",
	}, n.runs())
	n.poweroff(ctx, c)
}

// journalLine is one of the executor's log lines as the journal shows it:
// "<time> <LEVEL> <message> {"stage": ..., "script": ..., ...}".
type journalLine struct{ level, message, stage, script string }

// in reports whether the journal text holds the line.
func (l journalLine) in(journal string) bool {
	for _, line := range strings.Split(journal, "\n") {
		_, rest, ok := strings.Cut(line, " "+l.level+" "+l.message+" {")
		if !ok {
			continue
		}
		var fields map[string]any
		if json.Unmarshal([]byte("{"+rest), &fields) != nil {
			continue
		}
		if fields["stage"] == l.stage && fields["script"] == l.script {
			return true
		}
	}
	return false
}

// journalTime is the time of the first journal line (short-precise) holding text.
func journalTime(t *testing.T, journal, text string) time.Time {
	t.Helper()
	for _, line := range strings.Split(journal, "\n") {
		if strings.Contains(line, text) && len(line) > 22 {
			at, err := time.Parse("Jan 02 15:04:05.000000", line[:22])
			require.NoError(t, err, "%q", line)
			return at
		}
	}
	t.Fatalf("no %q in the journal:\n%s", text, journal)
	return time.Time{}
}

// TestStagesBootAndReboot: the same two boots in per-stage mode. The bootstrapped oneshot ends
// before slurmd starts, the ready oneshot after it; both stay active (exited), a slurmd restart
// starts neither again, and the journal of each holds its scripts.
func TestStagesBootAndReboot(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	n := newNode(t, stageMode)
	n.configure(
		[]script{ok("first-only"), ok("every-boot").every()},
		[]script{ok("ready-every").every()},
	)
	for boot, want := range [][]string{
		{
			"nodeBootstrapped/first-only first=1 slurmd=inactive",
			"nodeBootstrapped/every-boot first=1 slurmd=inactive",
			"nodeReady/ready-every first=1 slurmd=active",
		},
		{
			"nodeBootstrapped/every-boot first=0 slurmd=inactive",
			"nodeReady/ready-every first=0 slurmd=active",
		},
	} {
		start := time.Now()
		runs := len(n.runs())
		c := n.boot(ctx)
		b, r, system := waitDone(ctx, c, stageMode)
		record(t, "boot to the end of nodeReady", time.Since(start))
		require.Equal(t, "running", system)
		for _, u := range []nspawn.Unit{b, r} {
			require.Equal(t, "active/exited", state(u), "%v", u)
			require.Equal(t, 0, u.ExecMainStatus, "%v", u)
		}
		require.Equal(t, "enabled\n", c.MustRun(ctx, "systemctl", "is-enabled", bootUnit))
		require.Equal(t, want, n.runs()[runs:], "boot %d", boot+1)
		jb, jr := c.Journal(ctx, "-u", bootUnit), c.Journal(ctx, "-u", readyUnit)
		assert.True(t, journalLine{"INFO", "starting script", "nodeBootstrapped", "every-boot"}.in(jb), "journal:\n%s", jb)
		assert.True(t, journalLine{"INFO", "script completed", "nodeReady", "ready-every"}.in(jr), "journal:\n%s", jr)
		requireNoRerun(t, ctx, c, n, b, r)
		n.poweroff(ctx, c)
	}
}
