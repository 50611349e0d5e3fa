package perf_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/cache"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/paths"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/source"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/testenv"
	"github.com/pcs-lifecycle/pcs-lifecycle/pkg/lifecycle"
)

// w2Latency is what the proxy adds to every request (a distant S3 endpoint).
const w2Latency = 50 * time.Millisecond

// TestW2Downloads: a first boot's downloads (fetch on a new instance: the download phase of
// run and daemon, without running the scripts) of 40 scripts of 256 KiB, 20 per stage, from versitygw behind a proxy adding 50 ms to every
// request. Peers: the same code path with one script (one request's latency, as the
// executor sees it: client set-up included), and the 40 downloads one at a time through the
// same fetcher and cache. Each S3 GET is counted at the proxy: exactly one per script.
func TestW2Downloads(t *testing.T) {
	perStage, size := 1, 256<<10
	if full {
		perStage = 20
	}
	n := 2 * perStage
	srv := testenv.SharedS3(t)
	bucket := srv.NewBucket(t)
	var keys []string
	for i := 0; i < n; i++ {
		key := fmt.Sprintf("w2/s%02d.sh", i)
		srv.Put(t, bucket, key, script(size))
		keys = append(keys, "s3://"+bucket+"/"+key)
	}
	px := testenv.StartLatencyProxy(t, srv.Endpoint, w2Latency)
	env := s3env(t, srv, px.URL)
	dir := t.TempDir()
	cfgAll := writeConfig(t, dir, keys[:perStage], keys[perStage:])
	cfgOne := writeConfig(t, dir, keys[:1], nil)

	// downloads runs a first boot's fetch and returns the executor's own measure of its
	// download phase ("downloads finished", duration_ms), its CPU time, and the GETs the proxy
	// saw.
	downloads := func(cfg string, scripts int) (float64, float64, int) {
		px.Reset()
		nd := newNode(t, env)
		p := nd.run(t, "fetch", "--config", cfg, "--boot-id", "b1")
		require.Equal(t, 0, p.code, "first boot: %s", p)
		d, ok := nd.lastNum(t, "downloads finished", "duration_ms")
		require.True(t, ok, "no 'downloads finished' line")
		require.Equal(t, scripts, nd.count(t, "Downloaded script"))
		return d, ms(p.cpu), px.Count("GET", "/"+bucket+"/")
	}
	// sequential downloads the same scripts one at a time with the executor's own fetcher
	// and cache (a new fetcher, as a new executor would build).
	sequential := func() float64 {
		t.Setenv("AWS_ENDPOINT_URL_S3", px.URL)
		c := cache.New(paths.New(t.TempDir()))
		f := source.New(source.Config{})
		t0 := time.Now()
		for i, loc := range keys {
			_, _, err := c.PutScriptFrom(fmt.Sprintf("s%02d", i), func(w cache.Temp) (string, error) {
				res, err := f.FetchTo(context.Background(), lifecycle.ScriptSource{ScriptLocation: loc}, w)
				return res.SHA256, err
			})
			require.NoError(t, err)
		}
		return ms(time.Since(t0))
	}
	srv.Env(t)

	var all, one, seq, cpuAll, cpuOne []float64
	conns, gets := 0, 0
	for i := 0; i < rounds; i++ {
		d, c, g := downloads(cfgAll, n)
		require.Equal(t, n, g, "exactly one GET per script (no retried or duplicate fetch): %v", px.PerPath())
		all, cpuAll, conns, gets = append(all, d), append(cpuAll, c), px.Connections(), g
		d, c, g = downloads(cfgOne, 1)
		require.Equal(t, 1, g)
		one, cpuOne = append(one, d), append(cpuOne, c)
		seq = append(seq, sequential())
	}
	a, o, s := median(all), median(one), median(seq)
	report(t, row{Workload: "W2", Measure: fmt.Sprintf("first-boot downloads, %d x 256 KiB, +50 ms/request", n), Value: a, Unit: "ms",
		Peer: "one script (one request)", PeerVal: o, Target: "<= 2x one request", Met: met(a <= 2*o),
		Note: fmt.Sprintf("%d GETs, %d connections", gets, conns)})
	report(t, row{Workload: "W2", Measure: fmt.Sprintf("  executor CPU (user+sys), fetch of %d", n), Value: median(cpuAll), Unit: "ms",
		Peer: "fetch of one", PeerVal: median(cpuOne), Note: "whole process, start-up included"})
	report(t, row{Workload: "W2", Measure: fmt.Sprintf("  the same %d downloads one at a time", n), Value: s, Unit: "ms",
		Peer: "concurrent (above)", PeerVal: a, Target: ">= 10x slower than concurrent", Met: met(s >= 10*a)})
}
