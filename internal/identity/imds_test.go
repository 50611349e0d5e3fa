package identity_test

// The IMDS path of the node identity against AWS's amazon-ec2-metadata-mock on loopback,
// IMDSv2 only (a request without a session token is refused), reached through
// AWS_EC2_METADATA_SERVICE_ENDPOINT as on a node.

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/identity"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/testenv"
)

// sdkEnv points the SDK at the mock and away from anything of the machine's.
func sdkEnv(t *testing.T, endpoint string) {
	t.Helper()
	empty := filepath.Join(t.TempDir(), "aws-empty")
	require.NoError(t, os.WriteFile(empty, nil, 0o600))
	t.Setenv("AWS_CONFIG_FILE", empty)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", empty)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "")
	t.Setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", endpoint)
	t.Setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE", "")
	t.Setenv("AWS_EC2_METADATA_V1_DISABLED", "")
	t.Setenv("AWS_REGION", "")
	t.Setenv("AWS_DEFAULT_REGION", "")
	t.Setenv("AWS_PROFILE", "")
}

func TestIMDSv2(t *testing.T) {
	mock := testenv.StartIMDS(t, "i-0feedc0ffee123456", "eu-west-3")
	sdkEnv(t, mock.Endpoint)

	// The mock is IMDSv2 only: without a token it refuses, so the reads below used one.
	resp, err := http.Get(mock.Endpoint + "/latest/meta-data/instance-id")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "the mock requires a session token")

	ctx := context.Background()
	md := identity.NewIMDS(ctx)
	require.NotNil(t, md, "IMDS is enabled")
	id, err := md.InstanceID(ctx)
	require.NoError(t, err)
	require.Equal(t, "i-0feedc0ffee123456", id)
	region, err := md.Region(ctx)
	require.NoError(t, err)
	require.Equal(t, "eu-west-3", region)

	t.Run("Resolve takes the instance and region from IMDS", func(t *testing.T) {
		bootID := filepath.Join(t.TempDir(), "boot_id")
		require.NoError(t, os.WriteFile(bootID, []byte("boot-1\n"), 0o644))
		n := identity.Node{NodeID: "compute-1"}
		require.NoError(t, identity.Resolve(ctx, &n, md, filepath.Join(t.TempDir(), "no-machine-id"), bootID))
		require.Equal(t, identity.Node{
			NodeID: "compute-1", InstanceID: "i-0feedc0ffee123456", InstanceIDSource: "imds",
			BootID: "boot-1", Region: "eu-west-3",
		}, n)
	})

	t.Run("a given instance ID wins and IMDS is not asked for the region", func(t *testing.T) {
		bootID := filepath.Join(t.TempDir(), "boot_id")
		require.NoError(t, os.WriteFile(bootID, []byte("boot-1\n"), 0o644))
		n := identity.Node{NodeID: "compute-1", InstanceID: "i-0given"}
		require.NoError(t, identity.Resolve(ctx, &n, md, filepath.Join(t.TempDir(), "no-machine-id"), bootID))
		require.Equal(t, "flag", n.InstanceIDSource)
		require.Equal(t, "i-0given", n.InstanceID)
		require.Empty(t, n.Region)
	})
}

// TestIMDSDisabled: AWS_EC2_METADATA_DISABLED=true keeps the executor off IMDS even with an
// endpoint that answers; the instance falls back to /etc/machine-id.
func TestIMDSDisabled(t *testing.T) {
	mock := testenv.StartIMDS(t, "i-0feedc0ffee123456", "eu-west-3")
	sdkEnv(t, mock.Endpoint)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	require.Nil(t, identity.NewIMDS(context.Background()))

	dir := t.TempDir()
	machineID, bootID := filepath.Join(dir, "machine-id"), filepath.Join(dir, "boot_id")
	require.NoError(t, os.WriteFile(machineID, []byte("0123456789abcdef0123456789abcdef\n"), 0o444))
	require.NoError(t, os.WriteFile(bootID, []byte("boot-1\n"), 0o444))
	n := identity.Node{NodeID: "compute-1"}
	require.NoError(t, identity.Resolve(context.Background(), &n, nil, machineID, bootID))
	require.Equal(t, "machine-id:0123456789abcdef0123456789abcdef", n.InstanceID)
	require.Equal(t, "machine-id", n.InstanceIDSource)
}
