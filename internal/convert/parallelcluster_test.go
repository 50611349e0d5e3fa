package convert

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pcs-lifecycle/pcs-lifecycle/pkg/lifecycle"
)

const noSum = "not verified: no checksum; with onError TERMINATE, a changed or damaged object that fails replaces every node launched after it"

// TestParallelCluster: a cluster configuration with two queues that have custom actions (one
// with Sequence forms, one with a single Script and Args), a queue without any, HeadNode
// OnNodeConfigured and OnNodeUpdated, a queue OnNodeUpdated and a login pool: one document per
// queue, every boot and TERMINATE as ParallelCluster runs them, warnings for what has no
// equivalent, and local copies of the scripts read for ParallelCluster's own files.
func TestParallelCluster(t *testing.T) {
	docs, common, err := ParallelCluster(read(t, "parallelcluster.yaml"),
		ParallelClusterOptions{EveryBoot: true, ScriptsFrom: "testdata/pcluster-scripts"})
	require.NoError(t, err)
	require.Len(t, docs, 2)
	cpu, gpu := docs[0], docs[1]
	assert.Equal(t, "cpu", cpu.Name)
	assert.Equal(t, "gpu", gpu.Name)
	for _, d := range docs {
		valid(t, d)
		assert.Equal(t, lifecycle.RefreshOnReboot, d.Document.ScriptCachingPolicy)
		for _, st := range lifecycle.Stages {
			for _, s := range d.Document.Scripts(st) {
				assert.Equal(t, lifecycle.EveryBoot, s.ExecutionPolicy, s.Name)
				assert.Equal(t, lifecycle.Terminate, s.OnError, s.Name)
			}
		}
	}
	golden(t, "pcluster-cpu.json", cpu.JSON)
	golden(t, "pcluster-gpu.json", gpu.JSON)

	names := func(ss []lifecycle.Script) (out []string) {
		for _, s := range ss {
			out = append(out, s.Name)
		}
		return out
	}
	assert.Equal(t, []string{"mount-lustre", "install-spack"}, names(cpu.Document.Stages.NodeBootstrapped), "OnNodeStart Sequence, in order")
	assert.Equal(t, []string{"node-health"}, names(cpu.Document.Stages.NodeReady), "OnNodeConfigured Script")
	assert.Equal(t, []string{"--strict", "60"}, cpu.Document.Stages.NodeReady[0].Arguments)
	assert.Equal(t, []string{"mount-lustre", "mount-lustre-2"}, names(gpu.Document.Stages.NodeBootstrapped), "names made unique")

	const q0 = "Scheduling.SlurmQueues[0].CustomActions"
	assert.Equal(t, []string{
		q0 + ".OnNodeUpdated: not converted: PCS runs no script when a compute node group is updated (its nodes are replaced, and run nodeBootstrapped and nodeReady again)",
		q0 + ".OnNodeStart.Sequence[0].Script: testdata/pcluster-scripts/pcluster/mount-lustre.sh reads ParallelCluster's own files or variables (/etc/parallelcluster), " +
			"which PCS nodes do not have: use the PCS_* variables (PCS_NODE_ID, PCS_COMPUTE_NODE_GROUP_NAME, …) instead",
		q0 + ".OnNodeStart.Sequence[1].Script: no local copy of https://raw.githubusercontent.example.com/research/hpc-tools/v3/install-spack.sh in testdata/pcluster-scripts: not checked for ParallelCluster's own files",
		q0 + ".OnNodeConfigured.Script: no local copy of s3://hpc-admin-111122223333/pcluster/node-health.sh in testdata/pcluster-scripts: not checked for ParallelCluster's own files",
		q0 + ".OnNodeStart.Sequence[0].Script: " + noSum,
		q0 + ".OnNodeStart.Sequence[1].Script: not verified: no checksum on an https:// location: nothing checks what the server sends" + lifecycle.TerminateNoChecksumNote,
		q0 + ".OnNodeConfigured.Script: " + noSum,
	}, cpu.Warnings)
	assert.Contains(t, gpu.Warnings, "Scheduling.SlurmQueues[1].CustomActions.OnNodeConfigured.Args[1]: refers to ParallelCluster's own files or variables (/etc/parallelcluster), which PCS nodes do not have")
	assert.Equal(t, []string{
		"HeadNode.CustomActions.OnNodeConfigured: not converted: a PCS cluster has no head node of yours to run it on (the Slurm controller is managed); run it where you manage the cluster from",
		"HeadNode.CustomActions.OnNodeUpdated: not converted: a PCS cluster has no head node of yours to run it on (the Slurm controller is managed); run it where you manage the cluster from",
		"LoginNodes.Pools[0].CustomActions (pool login): not converted: PCS login nodes are a compute node group of their own; convert them into that group's document by hand",
		"Scheduling.SlurmQueues[2] (queue debug): no CustomActions: no document",
	}, common)

	t.Run("one queue, first boot only", func(t *testing.T) {
		docs, _, err := ParallelCluster(read(t, "parallelcluster.yaml"), ParallelClusterOptions{Queue: "gpu"})
		require.NoError(t, err)
		require.Len(t, docs, 1)
		d := docs[0]
		valid(t, d)
		assert.Equal(t, lifecycle.CacheOnce, d.Document.ScriptCachingPolicy)
		assert.Equal(t, lifecycle.FirstBootOnly, d.Document.Stages.NodeReady[0].ExecutionPolicy)
		assert.Contains(t, d.Warnings, "Scheduling.SlurmQueues[1].CustomActions: the scripts were not read: give --scripts-from DIR to check them for ParallelCluster's own files "+
			"(/etc/parallelcluster/cfnconfig, cfn_* variables), which PCS nodes do not have")
	})
	t.Run("queues", func(t *testing.T) {
		_, _, err := ParallelCluster(read(t, "parallelcluster.yaml"), ParallelClusterOptions{Queue: "gpus"})
		assert.Equal(t, []string{"--queue gpus: no such queue; the queues: cpu, gpu, debug"}, problemsOf(t, err))
		_, _, err = ParallelCluster(read(t, "parallelcluster.yaml"), ParallelClusterOptions{Queue: "debug"})
		assert.Equal(t, []string{"--queue debug: it has no OnNodeStart or OnNodeConfigured custom actions: nothing to convert",
			"Scheduling.SlurmQueues[2] (queue debug): no CustomActions: no document"}, problemsOf(t, err))
	})
}

func TestParallelClusterErrors(t *testing.T) {
	cfg := func(actions string) []byte {
		return []byte("Scheduling:\n  Scheduler: slurm\n  SlurmQueues:\n    - Name: q\n      CustomActions:\n" + actions)
	}
	const p = "Scheduling.SlurmQueues[0].CustomActions"
	cases := []struct {
		name, actions string
		want          []string
	}{
		{"both Script and Sequence", "        OnNodeStart:\n          Script: s3://bucket/a.sh\n          Sequence:\n            - Script: s3://bucket/b.sh\n",
			[]string{p + ".OnNodeStart: has both Script and Sequence; ParallelCluster refuses this too: keep one"}},
		{"neither", "        OnNodeStart:\n          Args: [x]\n", []string{p + ".OnNodeStart: no Script and no Sequence"}},
		{"an unknown event", "        OnNodeStarted:\n          Script: s3://bucket/a.sh\n",
			[]string{p + ".OnNodeStarted: unknown custom action event; ParallelCluster's are OnNodeStart, OnNodeConfigured and OnNodeUpdated"}},
		{"args not a list", "        OnNodeConfigured:\n          Script: s3://bucket/a.sh\n          Args: --fast\n", []string{p + ".OnNodeConfigured.Args: must be a list of strings"}},
		{"a location PCS refuses", "        OnNodeConfigured:\n          Sequence:\n            - Script: s3://bucket/a.sh\n            - Script: http://mirror.example.com/b.sh\n",
			[]string{p + ".OnNodeConfigured.Sequence[1].Script: http:// is not accepted: use https:// or s3://"}},
		{"an argument too long", "        OnNodeConfigured:\n          Script: s3://bucket/a.sh\n          Args: [ok, " + string(make([]byte, 0)) + "\"" + repeat("x", 300) + "\"]\n",
			[]string{p + ".OnNodeConfigured.Args[1]: longer than 256 characters (it has 300)"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := ParallelCluster(cfg(tc.actions), ParallelClusterOptions{EveryBoot: true})
			assert.Equal(t, tc.want, problemsOf(t, err))
		})
	}
	t.Run("not a ParallelCluster configuration", func(t *testing.T) {
		_, _, err := ParallelCluster([]byte("Resources: {}\n"), ParallelClusterOptions{})
		assert.Equal(t, []string{"Scheduling.SlurmQueues: missing or empty: this is not a ParallelCluster 3 cluster configuration"}, problemsOf(t, err))
		_, _, err = ParallelCluster([]byte("Scheduling:\n  Scheduler: awsbatch\n  AwsBatchQueues: []\n"), ParallelClusterOptions{})
		assert.Equal(t, []string{"Scheduling.Scheduler: awsbatch: PCS runs Slurm; only Slurm queues are converted"}, problemsOf(t, err))
	})
	t.Run("names from file names", func(t *testing.T) {
		used := map[string]bool{}
		assert.Equal(t, "setup", uniqueName("s3://b/x/setup.sh", used))
		assert.Equal(t, "setup-2", uniqueName("https://h.example.com/setup.sh?v=1", used))
		assert.Equal(t, "install-cuda-12-4", uniqueName("s3://b/install cuda.12.4.sh", used))
		assert.Equal(t, "script", uniqueName("s3://b/---.sh", used))
	})
}

func repeat(s string, n int) string {
	b := make([]byte, 0, n*len(s))
	for i := 0; i < n; i++ {
		b = append(b, s...)
	}
	return string(b)
}
