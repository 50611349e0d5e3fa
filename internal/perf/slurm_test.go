package perf_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/notify/notifytest"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/slurm"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/testenv"
)

// cluster is a test slurmctld whose log records each registration (debug level, ms times).
type cluster struct {
	*testenv.Slurm
}

func startCluster(t testing.TB, nodes []string) *cluster {
	t.Helper()
	s := testenv.StartSlurm(t, testenv.SlurmOptions{Nodes: nodes,
		Extra: []string{"LogTimeFormat=iso8601_ms", "SlurmctldDebug=debug"}})
	return &cluster{Slurm: s}
}

var registeredRE = regexp.MustCompile(`(?m)^\[([0-9T:.-]+)\] debug:  validate_node_specs: node (\S+) registered`)

// registrations are the moments slurmctld recorded each node's (first) registration.
func (c *cluster) registrations(t testing.TB) map[string]time.Time {
	t.Helper()
	data, err := os.ReadFile(c.SlurmctldLog())
	require.NoError(t, err)
	out := map[string]time.Time{}
	for _, m := range registeredRE.FindAllSubmatch(data, -1) {
		at, err := time.ParseInLocation("2006-01-02T15:04:05.000", string(m[1]), time.Local)
		require.NoError(t, err)
		if _, ok := out[string(m[2])]; !ok {
			out[string(m[2])] = at
		}
	}
	return out
}

var rpcRE = regexp.MustCompile(`(?m)^\s+(REQUEST_\S+)\s+\(\s*\d+\) count:(\d+)`)

// sdiag returns the controller's RPC counts by type since the last reset; reset zeroes them.
func (c *cluster) sdiag(t testing.TB, reset bool) map[string]int {
	t.Helper()
	args := []string{}
	if reset {
		args = append(args, "-r")
	}
	out, err := c.Command("sdiag", args...).CombinedOutput()
	require.NoError(t, err, "sdiag: %s", out)
	counts := map[string]int{}
	for _, m := range rpcRE.FindAllSubmatch(out, -1) {
		n, _ := strconv.Atoi(string(m[2]))
		counts[string(m[1])] = n
	}
	return counts
}

// nodeQueries is how many RPCs reading node state (scontrol show node: node and partition
// information) the controller answered since the last reset.
func (c *cluster) nodeQueries(t testing.TB) int {
	t.Helper()
	n := 0
	for k, v := range c.sdiag(t, false) {
		if strings.HasPrefix(k, "REQUEST_NODE_INFO") || k == "REQUEST_PARTITION_INFO" {
			n += v
		}
	}
	return n
}

// slurmEnv is an executor's environment against the cluster.
func (c *cluster) slurmEnv(base []string) []string {
	env := append([]string(nil), base...)
	for _, kv := range c.Env() {
		if strings.HasPrefix(kv, "PATH=") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// scriptStarts are the moments executor.log recorded each start of a script of stage.
func (n *node) scriptStarts(t testing.TB, stage string) []time.Time {
	t.Helper()
	var out []time.Time
	for _, l := range n.executorLog(t) {
		if l["message"] == "starting script" && l["stage"] == stage {
			at, err := time.Parse(time.RFC3339Nano, l["timestamp"].(string))
			require.NoError(t, err)
			out = append(out, at)
		}
	}
	return out
}

// bootDaemon boots node n as systemd would: pcs-lifecycle daemon; slurmd of the node started
// when it sends READY=1 (slurmd.service is ordered after it). It returns the finished daemon.
func bootDaemon(t testing.TB, c *cluster, n *node, cfg string, extra ...string) proc {
	t.Helper()
	p, err := bootWith(notifytest.Listen(t), c, n, cfg, extra...)
	require.NoError(t, err)
	return p
}

// bootWith is bootDaemon for any goroutine, with its notify socket made beforehand.
func bootWith(sock *notifytest.Socket, c *cluster, n *node, cfg string, extra ...string) (proc, error) {
	env := append(append([]string(nil), n.env...), "NOTIFY_SOCKET="+sock.Path)
	argv := n.argv("daemon", append([]string{"--config", cfg, "--boot-id", "b1", "--scontrol", c.Scontrol,
		"--registration-timeout", "3m"}, extra...)...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env, cmd.Dir = env, "/"
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return proc{}, err
	}
	hwm := watchHWM(cmd.Process.Pid, 20*time.Millisecond) // up to 100 at once: not too often
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = cmd.Wait()
	}()
	var launchErr error
	if _, ok := sock.WaitFor("READY=1", 5*time.Minute); ok {
		launchErr = c.LaunchSlurmd(n.id)
		// A slurmd that exits at once (its port, found free, taken meanwhile on this busy
		// machine) is started again, as systemd's Restart=on-failure would, up to 5 times.
		tick := time.NewTicker(500 * time.Millisecond)
		for tries := 0; launchErr == nil; {
			select {
			case <-done:
			case <-tick.C:
				if c.SlurmdExited(n.id) && tries < 5 {
					tries++
					launchErr = c.LaunchSlurmd(n.id)
				}
				continue
			}
			break
		}
		tick.Stop()
	}
	<-done
	p := proc{code: cmd.ProcessState.ExitCode(), out: out.String(), wall: time.Since(t0), maxRSS: hwm()}
	fillUsage(&p, cmd)
	if launchErr != nil {
		return p, fmt.Errorf("start slurmd of %s: %w", n.id, launchErr)
	}
	return p, nil
}

// TestW5Registration: the time from slurmctld recording a node's registration to the start of
// its first nodeReady script, for a daemon whose slurmd starts at its READY=1 (as systemd
// orders them), and the controller RPCs its wait costs (sdiag). Peer: polling every 2 s from
// slurmd's start (the schedule before the fast checks), measured the same way up to the
// moment it sees the node registered. Also: the RPCs of a 30 s wait for a node that never
// registers.
func TestW5Registration(t *testing.T) {
	nodes := rounds
	var names []string
	for i := 0; i < nodes; i++ {
		names = append(names, fmt.Sprintf("w5n%d", i), fmt.Sprintf("w5p%d", i))
	}
	names = append(names, "w5never")
	c := startCluster(t, names)
	srv := testenv.SharedS3(t)
	bucket := srv.NewBucket(t)
	srv.Put(t, bucket, "ready.sh", script(0))
	cfg := writeConfig(t, t.TempDir(), nil, []string{"s3://" + bucket + "/ready.sh"})
	env := c.slurmEnv(s3env(t, srv, srv.Endpoint))

	var lat, peerLat []float64
	var rpcs, peerRPCs []float64
	peerChecks := 0
	for i := 0; i < nodes; i++ {
		n := newNode(t, env)
		n.id = fmt.Sprintf("w5n%d", i)
		c.sdiag(t, true)
		p := bootDaemon(t, c, n, cfg)
		require.Equal(t, 0, p.code, "daemon: %s", p)
		rpcs = append(rpcs, float64(c.nodeQueries(t)))
		starts := n.scriptStarts(t, ready)
		require.Len(t, starts, 1, "the nodeReady script ran once")
		reg, ok := c.registrations(t)[n.id]
		require.True(t, ok, "slurmctld recorded no registration of %s", n.id)
		require.True(t, starts[0].After(reg), "nodeReady started at %s, before the registration at %s", starts[0], reg)
		lat = append(lat, ms(starts[0].Sub(reg)))

		// The peer: a check every 2 s from slurmd's start, as before the fast checks.
		peer := fmt.Sprintf("w5p%d", i)
		sc := slurm.New(slurm.Options{Scontrol: c.Scontrol, Env: c.Env()})
		c.sdiag(t, true)
		c.StartSlurmdNoWait(t, peer)
		var seen time.Time
		for {
			peerChecks++
			st, err := sc.NodeState(context.Background(), peer)
			if err == nil && slurm.Registered(st) {
				seen = time.Now()
				break
			}
			time.Sleep(slurm.DefaultPollInterval)
		}
		peerRPCs = append(peerRPCs, float64(c.nodeQueries(t)))
		reg, ok = c.registrations(t)[peer]
		require.True(t, ok)
		peerLat = append(peerLat, ms(seen.Sub(reg)))
	}
	p50, p99 := median(append([]float64(nil), lat...)), percentile(append([]float64(nil), lat...), 99)
	report(t, row{Workload: "W5", Measure: "registration -> first nodeReady script start, p50", Value: p50, Unit: "ms",
		Peer: "fixed 2 s poll, registration -> seen", PeerVal: median(peerLat), Target: "<= 300 ms", Met: met(p50 <= 300)})
	report(t, row{Workload: "W5", Measure: "  the same, p99", Value: p99, Unit: "ms",
		Peer: "fixed 2 s poll", PeerVal: percentile(peerLat, 99), Target: "<= 1000 ms", Met: met(p99 <= 1000)})
	report(t, row{Workload: "W5", Measure: "  controller RPCs per boot (node and partition info)", Value: median(rpcs), Unit: "RPCs",
		Peer: "fixed 2 s poll", PeerVal: median(peerRPCs)})

	// A node that never registers, for 30 s (3 s by default): the wait's RPCs, against a
	// check every 2 s over the same time (the peer's RPCs per check, measured above).
	wait := 3 * time.Second
	if full {
		wait = 30 * time.Second
	}
	n := newNode(t, env)
	n.id = "w5never"
	c.sdiag(t, true)
	pr := run(t, n.env, n.argv("run", "--stage", ready, "--config", cfg, "--boot-id", "b1", "--scontrol", c.Scontrol,
		"--registration-timeout", wait.String())...)
	require.Equal(t, 1, pr.code, "a registration timeout is exit 1: %s", pr)
	got := c.nodeQueries(t)
	perCheck := 0.0
	if peerChecks > 0 {
		perCheck = sum(peerRPCs) / float64(peerChecks)
	}
	// Checks at 0, 2, 4, … while the deadline has not passed (the one due at the deadline is
	// not made).
	fixed := float64(int((wait-1)/slurm.DefaultPollInterval)+1) * perCheck
	report(t, row{Workload: "W5", Measure: fmt.Sprintf("  controller RPCs over a %s wait (never registers)", wait), Value: float64(got), Unit: "RPCs",
		Peer: "fixed 2 s poll (checks x RPCs per check)", PeerVal: fixed, Target: "fewer than the fixed poll", Met: met(float64(got) < fixed)})
}

func sum(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s
}
