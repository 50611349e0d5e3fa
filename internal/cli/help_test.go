package cli

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"
)

// TestHelpEveryCommand: every command's help has an example and its exit codes, and names
// the environment variable of each flag that has one, on the flag's own line.
func TestHelpEveryCommand(t *testing.T) {
	var paths [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" {
			return
		}
		paths = append(paths, path)
		for _, sub := range c.Commands() {
			walk(sub, append(append([]string(nil), path...), sub.Name()))
		}
	}
	walk(NewRoot(), nil)
	require.Greater(t, len(paths), 10)
	for _, path := range paths {
		name := "pcs-lifecycle " + strings.Join(path, " ")
		r := execute(t, append(append([]string(nil), path...), "--help")...)
		require.Equal(t, 0, r.code, name)
		require.Contains(t, r.stdout, "Examples:\n", name)
		require.Contains(t, r.stdout, "Exit codes", name)
		for _, line := range strings.Split(r.stdout, "\n") {
			f := strings.Fields(line)
			if len(f) == 0 || !strings.HasPrefix(f[0], "--") && !(len(f) > 1 && strings.HasPrefix(f[1], "--")) {
				continue
			}
			flag := strings.TrimPrefix(f[0], "--")
			if len(f) > 1 && strings.HasPrefix(f[1], "--") {
				flag = strings.TrimPrefix(f[1], "--") // "-o, --output"
			}
			if env, ok := envFlags[flag]; ok {
				require.Contains(t, line, env, "%s: --%s does not name %s", name, flag, env)
			}
		}
	}
	r := execute(t, "run", "--help")
	require.Regexp(t, `--config string .*PCS_LIFECYCLE_CONFIG`, r.stdout)
	require.Contains(t, r.stdout, "4        a script failed under TERMINATE")
	require.Contains(t, execute(t, "status", "--help").stdout, "5  nothing has run on this boot")
}
