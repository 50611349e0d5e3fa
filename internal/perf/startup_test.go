package perf_test

import (
	"bufio"
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/testenv"
)

// TestW3Startup: `version`, `status` and `wait --stage nodeBootstrapped` (a stage that ended)
// on a node after its first boot, against a static hello-world built the same way
// (CGO_ENABLED=0 -trimpath -ldflags '-s -w'), interleaved, median of 3 × rounds runs each.
// Also where start-up goes: GODEBUG=inittrace=1 of `version`, package initialisation in all
// and the AWS SDK's share.
func TestW3Startup(t *testing.T) {
	srv := testenv.SharedS3(t)
	bucket := srv.NewBucket(t)
	srv.Put(t, bucket, "s.sh", script(0))
	n := newNode(t, s3env(t, srv, srv.Endpoint))
	cfg := writeConfig(t, t.TempDir(), []string{"s3://" + bucket + "/s.sh"}, nil)
	p := n.run(t, "run", "--stage", bootstrapped, "--config", cfg, "--boot-id", "b1")
	require.Equal(t, 0, p.code, "first boot: %s", p)

	cmds := []struct {
		name string
		argv []string
	}{
		{"hello-world", []string{helloPath}},
		{"version", []string{binPath, "version"}},
		{"status", n.argv("status", "--boot-id", "b1")},
		{"wait (stage ended)", n.argv("wait", "--stage", bootstrapped, "--boot-id", "b1")},
	}
	times := make([][]float64, len(cmds))
	k := 3 * rounds
	for i := 0; i < k; i++ {
		for j, c := range cmds {
			p := run(t, n.env, c.argv...)
			require.Equal(t, 0, p.code, "%s: %s", c.name, p)
			times[j] = append(times[j], ms(p.wall))
		}
	}
	hello := median(times[0])
	for j, c := range cmds[1:] {
		v := median(times[j+1])
		report(t, row{Workload: "W3", Measure: "start-up: " + c.name, Value: v, Unit: "ms", Peer: "static hello-world", PeerVal: hello,
			Target: "<= 2.5x hello-world", Met: met(v <= 2.5*hello)})
	}

	// Where it goes: package initialisation, and the AWS SDK's part of it.
	var all, sdk []float64
	for i := 0; i < k; i++ {
		a, s := initTrace(t, n.env)
		all, sdk = append(all, a), append(sdk, s)
	}
	report(t, row{Workload: "W3", Measure: "  package init of `version` (GODEBUG=inittrace=1)", Value: median(all), Unit: "ms",
		Note: "of which AWS SDK and smithy-go: " + strconv.FormatFloat(median(sdk), 'f', 2, 64) + " ms"})
}

// initTrace runs `version` with GODEBUG=inittrace=1 and sums the init times (ms): all packages,
// and those of the AWS SDK and smithy-go.
func initTrace(t testing.TB, env []string) (float64, float64) {
	t.Helper()
	p := run(t, append(append([]string(nil), env...), "GODEBUG=inittrace=1"), binPath, "version")
	require.Equal(t, 0, p.code, "%s", p)
	var all, sdk float64
	sc := bufio.NewScanner(bytes.NewReader([]byte(p.out)))
	for sc.Scan() {
		// init github.com/aws/... @1.2 ms, 0.33 ms clock, 93472 bytes, 721 allocs
		f := strings.Fields(sc.Text())
		if len(f) < 6 || f[0] != "init" {
			continue
		}
		v, err := strconv.ParseFloat(f[4], 64)
		if err != nil {
			continue
		}
		all += v
		if strings.Contains(f[1], "aws-sdk-go-v2") || strings.Contains(f[1], "smithy-go") {
			sdk += v
		}
	}
	return all, sdk
}
