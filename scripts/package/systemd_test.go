package packaging_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/nspawn"
)

// TestDebUnderSystemd runs the .deb's maintainer scripts where systemd is running: in a booted
// container (internal/nspawn; nothing reaches the host). The first install applies the preset
// (daemon mode enabled) and starts nothing; an upgrade keeps the administrator's choice of
// mode; purge removes the enablement links.
func TestDebUnderSystemd(t *testing.T) {
	cur, older := builds(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// The packages are copied into the container's root: the host's /tmp, where a clone may
	// sit, is not the container's.
	const oldDeb, curDeb = "/var/tmp/pcs-package-test/older.deb", "/var/tmp/pcs-package-test/current.deb"
	c := nspawn.Boot(ctx, t, nspawn.Spec{Files: []nspawn.File{{Path: oldDeb, Src: older.deb}, {Path: curDeb, Src: cur.deb}}})
	c.WaitSystem(ctx)
	state := func(verb, unit string) string {
		out, _ := c.Systemctl(ctx, verb, unit) // non-zero for disabled/inactive: the word says it
		return strings.TrimSpace(out)
	}
	loadState := func(unit string) string {
		out, err := c.Systemctl(ctx, "show", "-p", "LoadState", "--value", unit)
		require.NoError(t, err)
		return strings.TrimSpace(out)
	}
	const (
		daemon = "pcs-lifecycle.service"
		boot   = "pcs-lifecycle-bootstrapped.service"
		ready  = "pcs-lifecycle-ready.service"
	)

	c.MustRun(ctx, "dpkg", "--install", oldDeb)
	require.Equal(t, "enabled", state("is-enabled", daemon), "the preset enables daemon mode on the first install")
	require.Equal(t, "disabled", state("is-enabled", boot))
	require.Equal(t, "disabled", state("is-enabled", ready))
	require.Equal(t, "inactive", state("is-active", daemon), "installing starts nothing")
	require.Equal(t, "loaded", loadState(daemon), "systemd knows the unit: the postinst reloaded it")
	u := c.MustShow(ctx, daemon)
	require.Empty(t, u.InvocationID, "the daemon never ran: %s", u)

	// The administrator chooses per-stage mode; the upgrade keeps it.
	c.MustRun(ctx, "systemctl", "disable", daemon)
	c.MustRun(ctx, "systemctl", "enable", boot, ready)
	c.MustRun(ctx, "dpkg", "--install", curDeb)
	require.Contains(t, c.MustRun(ctx, "dpkg-query", "-W", "-f", "${Version}", pkgName), cur.version)
	require.Equal(t, "disabled", state("is-enabled", daemon), "the upgrade did not apply the preset again")
	require.Equal(t, "enabled", state("is-enabled", boot))
	require.Equal(t, "enabled", state("is-enabled", ready))
	for _, unit := range []string{daemon, boot, ready} {
		require.Equal(t, "inactive", state("is-active", unit), "upgrading starts nothing: %s", unit)
		require.Empty(t, c.MustShow(ctx, unit).InvocationID, "%s never ran", unit)
	}

	c.MustRun(ctx, "dpkg", "--purge", pkgName)
	links := c.MustRun(ctx, "sh", "-c", "ls /etc/systemd/system/*/pcs-lifecycle* 2>/dev/null || true")
	require.Empty(t, strings.TrimSpace(links), "purge removed the enablement links")
	require.Equal(t, "not-found", loadState(daemon), "the postrm reloaded systemd: the unit is gone")
}
