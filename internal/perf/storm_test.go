package perf_test

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/notify/notifytest"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/testenv"
)

// TestW6BootStorm: N sandbox nodes boot at once (pcs-lifecycle daemon each, its slurmd
// started at its READY=1) against one versitygw, behind a counting proxy, and one slurmctld
// with every node declared; each node has 2 scripts per stage. Every node must end with both
// stages succeeded, and the S3 GETs must be exactly scripts × nodes. Reported per N: wall
// time (first start to last exit), controller RPCs per node, peak RSS per executor (median
// and largest), registration → nodeReady start (p50, p99). N = 10, 50, 100 (2 by default).
func TestW6BootStorm(t *testing.T) {
	sizes := []int{2}
	if full {
		sizes = []int{10, 50, 100}
	}
	total := 0
	for _, n := range sizes {
		total += n
	}
	var names []string
	for i := 0; i < total; i++ {
		names = append(names, fmt.Sprintf("w6n%d", i))
	}
	c := startCluster(t, names)
	srv := testenv.SharedS3(t)
	bucket := srv.NewBucket(t)
	const perStage = 2
	var boot, rdy []string
	for i := 0; i < perStage; i++ {
		srv.Put(t, bucket, fmt.Sprintf("w6/b%d.sh", i), script(4096))
		srv.Put(t, bucket, fmt.Sprintf("w6/r%d.sh", i), script(4096))
		boot = append(boot, fmt.Sprintf("s3://%s/w6/b%d.sh", bucket, i))
		rdy = append(rdy, fmt.Sprintf("s3://%s/w6/r%d.sh", bucket, i))
	}
	px := testenv.StartLatencyProxy(t, srv.Endpoint, 0)
	cfg := writeConfig(t, t.TempDir(), boot, rdy)
	env := c.slurmEnv(s3env(t, srv, px.URL))

	type result struct {
		wall, rpcsPerNode, rssMed, rssMax, latP50, latP99 float64
	}
	var results []result
	next := 0
	for _, n := range sizes {
		nodes := make([]*node, n)
		socks := make([]*notifytest.Socket, n)
		for i := range nodes {
			nodes[i] = newNode(t, env)
			nodes[i].id = names[next]
			next++
			socks[i] = notifytest.Listen(t)
		}
		px.Reset()
		c.sdiag(t, true)
		procs := make([]proc, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		t0 := time.Now()
		for i := range nodes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				procs[i], errs[i] = bootWith(socks[i], c, nodes[i], cfg)
			}()
		}
		wg.Wait()
		wall := time.Since(t0)
		rpcs := c.nodeQueries(t)

		regs := c.registrations(t)
		var rss, lat []float64
		for i, nd := range nodes {
			require.NoError(t, errs[i])
			require.Equal(t, 0, procs[i].code, "node %s: %s", nd.id, procs[i])
			require.Equal(t, perStage, nd.scriptEnds(t, bootstrapped), "node %s: nodeBootstrapped scripts", nd.id)
			require.Equal(t, perStage, nd.scriptEnds(t, ready), "node %s: nodeReady scripts", nd.id)
			for _, l := range nd.executorLog(t) {
				msg, _ := l["message"].(string)
				assert.False(t, strings.Contains(msg, "lock"), "node %s waited on a lock: %v", nd.id, l)
			}
			rss = append(rss, float64(procs[i].maxRSS)/1024)
			starts := nd.scriptStarts(t, ready)
			require.Len(t, starts, perStage)
			reg, ok := regs[nd.id]
			require.True(t, ok, "no registration of %s", nd.id)
			lat = append(lat, ms(starts[0].Sub(reg)))
		}
		gets := px.Count("GET", "/"+bucket+"/")
		require.Equal(t, 2*perStage*n, gets, "S3 GETs: exactly scripts x nodes, no duplicate or retried fetch: %v", px.PerPath())
		sort.Float64s(rss)
		r := result{wall: ms(wall), rpcsPerNode: float64(rpcs) / float64(n), rssMed: median(rss), rssMax: rss[len(rss)-1],
			latP50: median(append([]float64(nil), lat...)), latP99: percentile(lat, 99)}
		results = append(results, r)
		report(t, row{Workload: "W6", Measure: fmt.Sprintf("boot storm N=%d: wall time, all nodes done", n), Value: r.wall, Unit: "ms",
			Note: fmt.Sprintf("%d real slurmd; %d GETs = %d scripts x %d nodes", n, gets, 2*perStage, n)})
		report(t, row{Workload: "W6", Measure: fmt.Sprintf("  N=%d: controller RPCs per node (node+partition info)", n), Value: r.rpcsPerNode, Unit: "RPCs"})
		report(t, row{Workload: "W6", Measure: fmt.Sprintf("  N=%d: peak RSS per executor, median (max)", n), Value: r.rssMed, Unit: "MiB",
			Note: fmt.Sprintf("max %.1f MiB", r.rssMax)})
		report(t, row{Workload: "W6", Measure: fmt.Sprintf("  N=%d: registration -> nodeReady start, p50 (p99)", n), Value: r.latP50, Unit: "ms",
			Note: fmt.Sprintf("p99 %.0f ms", r.latP99)})
		// The next size boots on a quiet controller: this storm's slurmds are stopped.
		for _, nd := range nodes {
			c.StopSlurmd(t, nd.id)
		}
	}
	if len(results) > 1 {
		a, b := results[0], results[len(results)-1]
		k := float64(sizes[len(sizes)-1]) / float64(sizes[0])
		report(t, row{Workload: "W6", Measure: fmt.Sprintf("  growth N=%d -> %d: wall time", sizes[0], sizes[len(sizes)-1]), Value: b.wall / a.wall, Unit: "x",
			Target: fmt.Sprintf("<= %.0fx (linear)", k), Met: met(b.wall/a.wall <= k)})
		report(t, row{Workload: "W6", Measure: "  growth: RPCs per node", Value: b.rpcsPerNode / a.rpcsPerNode, Unit: "x", Target: "<= 1x per node", Met: met(b.rpcsPerNode <= a.rpcsPerNode*1.0001)})
		report(t, row{Workload: "W6", Measure: "  growth: peak RSS per executor", Value: b.rssMed / a.rssMed, Unit: "x"})
	}
}
