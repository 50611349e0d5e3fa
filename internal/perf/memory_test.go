package perf_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/testenv"
)

// TestW7Memory: the peak RSS of a first boot (run --stage nodeBootstrapped on a new instance:
// it downloads the scripts of both stages, then runs nodeBootstrapped's) with 40 scripts of
// 2 MiB, the largest the contract allows, against the same with 40 tiny scripts. Downloads
// stream through the hash into the cache, so the size of the scripts must not show.
func TestW7Memory(t *testing.T) {
	perStage, size := 1, 2<<20
	if full {
		perStage = 20
	}
	srv := testenv.SharedS3(t)
	bucket := srv.NewBucket(t)
	big, tiny := script(size), script(0)
	srv.Put(t, bucket, "big.sh", big)
	srv.Put(t, bucket, "tiny.sh", tiny)
	env := s3env(t, srv, srv.Endpoint)
	locs := func(key string) []string {
		var l []string
		for i := 0; i < perStage; i++ {
			l = append(l, "s3://"+bucket+"/"+key)
		}
		return l
	}
	dir := t.TempDir()
	bigCfg := writeConfig(t, dir, locs("big.sh"), locs("big.sh"))
	tinyCfg := writeConfig(t, dir, locs("tiny.sh"), locs("tiny.sh"))

	firstBoot := func(cfg string, want []byte) proc {
		n := newNode(t, env)
		p := n.run(t, "run", "--stage", bootstrapped, "--config", cfg, "--boot-id", "b1")
		require.Equal(t, 0, p.code, "first boot: %s", p)
		require.Equal(t, perStage, n.scriptEnds(t, bootstrapped), "every nodeBootstrapped script ran and succeeded")
		// Every script of both stages is in the cache, whole, and nothing else is.
		scripts := filepath.Join(n.root, "etc/amazon/pcs/lifecycle/actions/config/scripts")
		ents, err := os.ReadDir(scripts)
		require.NoError(t, err)
		assert.Len(t, ents, 2*perStage, "one cached file per script, no temporary file left")
		for _, e := range ents {
			got, err := os.ReadFile(filepath.Join(scripts, e.Name()))
			require.NoError(t, err)
			require.Equal(t, len(want), len(got), e.Name())
			require.Equal(t, want, got, e.Name())
		}
		require.NoError(t, os.RemoveAll(n.root))
		return p
	}
	var bigRSS, tinyRSS []float64
	for i := 0; i < rounds; i++ {
		bigRSS = append(bigRSS, float64(firstBoot(bigCfg, big).maxRSS)/1024)
		tinyRSS = append(tinyRSS, float64(firstBoot(tinyCfg, tiny).maxRSS)/1024)
	}
	b, s := median(bigRSS), median(tinyRSS)
	n := 2 * perStage
	report(t, row{Workload: "W7", Measure: fmt.Sprintf("peak RSS, first boot, %d scripts of 2 MiB", n), Value: b, Unit: "MiB",
		Peer: fmt.Sprintf("%d tiny scripts", n), PeerVal: s, Target: "<= 32 MiB both", Met: met(b <= 32 && s <= 32)})
}
