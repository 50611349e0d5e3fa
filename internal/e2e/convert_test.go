package e2e_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestConvert: the converters' output passes validate as it is, and run takes it: a
// ParallelCluster configuration with two queues gives one file per queue; a CloudFormation
// template read from stdin gives the document on stdout.
func TestConvert(t *testing.T) {
	t.Parallel()
	n := newNode(t)
	testdata := filepath.Join("..", "convert", "testdata")

	r := n.runArgv([]string{"convert", "parallelcluster", filepath.Join(testdata, "parallelcluster.yaml")})
	require.Equal(t, 2, r.code, "two queues need --queue or --output-dir:\n%s", r)
	require.Contains(t, r.stderr, "2 queues have custom actions (cpu, gpu)")

	out := t.TempDir()
	r = n.runArgv([]string{"convert", "parallelcluster", filepath.Join(testdata, "parallelcluster.yaml"), "--output-dir", out})
	require.Equal(t, 0, r.code, "%s", r)
	require.Contains(t, r.stderr, "warning: HeadNode.CustomActions.OnNodeUpdated: not converted")
	require.Contains(t, r.stderr, "wrote "+filepath.Join(out, "gpu.json")+" (3 scripts from gpu)")
	for _, q := range []string{"cpu", "gpu"} {
		r := n.runArgv([]string{"validate", "--api-strict", filepath.Join(out, q+".json")})
		require.Equal(t, 0, r.code, "%s", r)
	}

	cmd := exec.Command(binPath, "convert", "cloudformation", "-",
		"--param", "AdminBucket=hpc-admin-111122223333", "--param", "AWS::Region=us-east-1", "--param", "AWS::StackName=research-prod",
		"--param", "ScratchFileSystem.DNSName=fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com", "--param", "ScratchFileSystem.LustreMountName=abcdefgh")
	cmd.Env = n.environ()
	tmpl, err := os.ReadFile(filepath.Join(testdata, "pcs-cluster.yaml"))
	require.NoError(t, err)
	cmd.Stdin = bytes.NewReader(tmpl)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "%s", stderr.String())
	doc := n.writeFile("converted.json", stdout.Bytes())
	r = n.runArgv([]string{"validate", "--api-strict", doc})
	require.Equal(t, 0, r.code, "%s", r)
	require.Contains(t, r.stdout, "valid (4 scripts, CACHE_ONCE")

	r = n.runArgv([]string{"convert", "terraform", "main.tf"})
	require.Equal(t, 2, r.code, "%s", r)
	require.Contains(t, r.stderr, `convert "terraform": unknown source`)

	r = n.runArgv([]string{"convert", "cloudformation", filepath.Join(testdata, "cdk-two-groups.json")})
	require.Equal(t, 2, r.code)
	require.True(t, strings.Contains(r.stderr, "choose one with --resource"), "%s", r)
}
