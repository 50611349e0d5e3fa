package e2e_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/testenv"
	"github.com/pcs-lifecycle/pcs-lifecycle/pkg/status"
)

// TestIdentityFromIMDS: a node given no instance ID asks the instance metadata service, here
// AWS's amazon-ec2-metadata-mock on loopback, IMDSv2 only, through
// AWS_EC2_METADATA_SERVICE_ENDPOINT. The scripts see the instance and its region, the state is
// keyed by that instance, and a second boot of it is a reboot.
func TestIdentityFromIMDS(t *testing.T) {
	t.Parallel()
	mock := testenv.StartIMDS(t, "i-0feedc0ffee0e2e01", "ap-southeast-2")
	w := newWeb(t)
	n := newNode(t, withCA(w),
		withEnv("AWS_EC2_METADATA_DISABLED", ""), // unset: IMDS on
		withEnv("AWS_EC2_METADATA_SERVICE_ENDPOINT", mock.Endpoint),
		withEnv("AWS_REGION", ""), // unset: the region comes from IMDS too
	)
	loc := w.put("/ids.sh", sh(`echo "instance=$PCS_INSTANCE_ID region=$AWS_REGION first=$PCS_IS_FIRST_BOOT"`))
	cfg := n.writeConfig(stages([]scriptDef{script("ids", loc).every()}, nil))
	argv := func(boot string, args ...string) []string {
		return append([]string{"--root", n.root, "--node-id", n.name, "--boot-id", boot}, args...)
	}

	r := n.runArgv(append([]string{"run"}, argv("imds-boot-1", "--stage", bootstrapped, "--config", cfg)...))
	require.Equal(t, 0, r.code, "%s", r)
	r = n.runArgv(append([]string{"run"}, argv("imds-boot-2", "--stage", bootstrapped)...))
	require.Equal(t, 0, r.code, "%s", r)
	require.Equal(t, []string{
		"instance=i-0feedc0ffee0e2e01 region=ap-southeast-2 first=1\n",
		"instance=i-0feedc0ffee0e2e01 region=ap-southeast-2 first=0\n",
	}, n.outputs(bootstrapped, "ids"))

	r = n.runArgv(append([]string{"status", "--json"}, argv("imds-boot-2")...))
	var d status.Document
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &d), "%s", r)
	require.Equal(t, "i-0feedc0ffee0e2e01", d.Node.InstanceID)
	require.False(t, d.Node.FirstBoot)
}
