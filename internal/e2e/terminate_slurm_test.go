package e2e_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/testenv"
)

// TestSlurmTerminateStaysDrained: a nodeReady script failing under TERMINATE leaves the node
// drained with the failure as its reason, with the job hold (whose drain it replaces: the node
// was never resumed, issue 7) and without it, with or without --drain-on-failure.
func TestSlurmTerminateStaysDrained(t *testing.T) {
	t.Parallel()
	b := newBucket(t)
	fatal := b.put(t, "fatal.sh", failScript(9))
	held, heldDrain, plain := newNode(t), newNode(t), newNode(t)
	s := startCluster(t, []*node{held, heldDrain, plain}, testenv.SlurmOptions{})
	const reason = "pcs-lifecycle: nodeReady/fatal exit=9"
	cases := []struct {
		name string
		n    *node
		args []string
	}{
		{name: "hold, no drain-on-failure", n: held, args: []string{"--hold-jobs-until-ready"}},
		{name: "hold and drain-on-failure", n: heldDrain, args: []string{"--hold-jobs-until-ready", "--drain-on-failure"}},
		{name: "no hold", n: plain},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			n := tc.n.with(t)
			s.StartSlurmd(t, n.name)
			cfg := n.writeConfig(stages(nil, []scriptDef{script("fatal", fatal).onErr("TERMINATE")}))
			r := n.requireRun(4, "run", append(append([]string{"--stage", ready, "--config", cfg}, slurmArgs(s)...), tc.args...)...)
			require.Contains(t, r.stderr, "TERMINATE")

			st := nodeState(t, s, n.name)
			require.True(t, st.Drained(), "a TERMINATE'd node is not drained: %s", st)
			require.Equal(t, reason, st.Reason)
			require.Equal(t, reason, st.Comment)
			n.requireLog("level", "WARN", "message", "node left drained after a failure", "reason", reason)
			require.Empty(t, n.find("message", "node resumed after nodeReady"), "a TERMINATE'd node was resumed")
		})
	}
}
