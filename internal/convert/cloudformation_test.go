package convert

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// deployed are the values a real deployment of testdata/pcs-cluster.yaml would have.
var deployed = map[string]string{
	"AdminBucket":                       "hpc-admin-111122223333",
	"AWS::Region":                       "us-east-1",
	"AWS::StackName":                    "research-prod",
	"ScratchFileSystem.DNSName":         "fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com",
	"ScratchFileSystem.LustreMountName": "abcdefgh",
}

func with(m map[string]string, kv ...string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

const cfnPath = "Resources.ComputeC7i.Properties.NodeLifecycleActions"

// TestCloudFormationYAML: a YAML template with short-form tags (!Sub in both forms, !Ref,
// !GetAtt inside !Sub, !Join over a CommaDelimitedList, !If on a condition built from !And,
// !Not, !Equals and !Condition, !FindInMap, !Select over !Split, AWS::NoValue) converts to the
// document the deployed stack would pass to PCS, and the document passes validate.
func TestCloudFormationYAML(t *testing.T) {
	d, err := CloudFormation(read(t, "pcs-cluster.yaml"), CloudFormationOptions{Params: deployed})
	require.NoError(t, err)
	valid(t, d)
	assert.Equal(t, "ComputeC7i", d.Name)
	golden(t, "pcs-cluster.json", d.JSON)
	assert.Equal(t, []string{
		cfnPath + ".Stages.NodeBootstrapped[1].ScriptSource: not verified: no checksum on an https:// location: nothing checks what the server sends",
		cfnPath + ".Stages.NodeBootstrapped[2].ScriptSource: not verified: no checksum",
		cfnPath + ".Stages.NodeReady[0].ScriptSource: not verified: no checksum",
	}, d.Warnings)

	t.Run("conditions follow the parameters", func(t *testing.T) {
		d, err := CloudFormation(read(t, "pcs-cluster.yaml"), CloudFormationOptions{Params: with(deployed, "Environment", "dev", "AWS::Region", "eu-west-1")})
		require.NoError(t, err)
		boot := d.Document.Stages.NodeBootstrapped
		require.Len(t, boot, 2, "efa-check is AWS::NoValue outside prod")
		assert.Equal(t, "https://mirror-dev.research.example.org/pcs/chrony.sh", boot[1].ScriptSource.ScriptLocation)
		assert.Equal(t, []string{"research", "dev"}[1], d.Document.Stages.NodeReady[0].Arguments[1])
	})
	t.Run("every value the template cannot give is named with the --param that gives it", func(t *testing.T) {
		_, err := CloudFormation(read(t, "pcs-cluster.yaml"), CloudFormationOptions{})
		assert.Equal(t, []string{
			cfnPath + ".Stages.NodeBootstrapped[0].ScriptSource.ScriptLocation: !Ref AdminBucket: parameter AdminBucket has no Default: give --param AdminBucket=VALUE",
			cfnPath + ".Stages.NodeBootstrapped[0].Arguments[0]: !GetAtt ScratchFileSystem.DNSName: an attribute of ScratchFileSystem (AWS::FSx::FileSystem) is known only after deployment: give --param ScratchFileSystem.DNSName=VALUE",
			cfnPath + ".Stages.NodeBootstrapped[0].Arguments[0]: !GetAtt ScratchFileSystem.LustreMountName: an attribute of ScratchFileSystem (AWS::FSx::FileSystem) is known only after deployment: give --param ScratchFileSystem.LustreMountName=VALUE",
			cfnPath + ".Stages.NodeBootstrapped[1].Arguments[0]: AWS::Region is known only when the stack is deployed: give --param AWS::Region=VALUE",
			"Conditions.UseEfa: AWS::Region is known only when the stack is deployed: give --param AWS::Region=VALUE",
			cfnPath + ".Stages.NodeReady[0].ScriptSource.ScriptLocation: !Ref AdminBucket: parameter AdminBucket has no Default: give --param AdminBucket=VALUE",
			cfnPath + ".Stages.NodeReady[0].Arguments[0]: AWS::StackName is known only when the stack is deployed: give --param AWS::StackName=VALUE",
		}, problemsOf(t, err))
	})
	t.Run("a --param nothing uses is a warning", func(t *testing.T) {
		d, err := CloudFormation(read(t, "pcs-cluster.yaml"), CloudFormationOptions{Params: with(deployed, "SubnetId", "subnet-1", "ScratchFileSystem.DNSNmae", "x")})
		require.NoError(t, err)
		assert.Contains(t, d.Warnings, "--param ScratchFileSystem.DNSNmae: not used by "+cfnPath)
		assert.Contains(t, d.Warnings, "--param SubnetId: not used by "+cfnPath)
	})
}

// TestCloudFormationJSON: a CDK-synthesised JSON template with two node groups: without
// --resource the error names both; with it, long-form intrinsics (Fn::Join, Ref) resolve and a
// resource's Ref comes from --param.
func TestCloudFormationJSON(t *testing.T) {
	data := read(t, "cdk-two-groups.json")
	_, err := CloudFormation(data, CloudFormationOptions{})
	assert.Equal(t, []string{"Resources: 2 compute node groups have NodeLifecycleActions (LoginGroup9F8E7D6C, ComputeGroup5A6B7C8D): choose one with --resource LOGICAL_ID"},
		problemsOf(t, err))

	_, err = CloudFormation(data, CloudFormationOptions{Resource: "PcsCluster0A1B2C3D"})
	assert.Equal(t, []string{"--resource PcsCluster0A1B2C3D: PcsCluster0A1B2C3D is a AWS::PCS::Cluster, not an AWS::PCS::ComputeNodeGroup; the template's compute node groups: LoginGroup9F8E7D6C, ComputeGroup5A6B7C8D"},
		problemsOf(t, err))
	_, err = CloudFormation(data, CloudFormationOptions{Resource: "Compute"})
	assert.Equal(t, []string{"--resource Compute: no AWS::PCS::ComputeNodeGroup named Compute; the template's compute node groups: LoginGroup9F8E7D6C, ComputeGroup5A6B7C8D"},
		problemsOf(t, err))

	opts := CloudFormationOptions{Resource: "ComputeGroup5A6B7C8D", Params: map[string]string{"AWS::AccountId": "111122223333", "AWS::Region": "us-east-1"}}
	_, err = CloudFormation(data, opts)
	assert.Equal(t, []string{"Resources.ComputeGroup5A6B7C8D.Properties.NodeLifecycleActions.Stages.NodeBootstrapped[0].Arguments[0]: " +
		"!Ref HomeFileSystem4E5F6A7B: the ID of resource HomeFileSystem4E5F6A7B (AWS::EFS::FileSystem) is known only after deployment: give --param HomeFileSystem4E5F6A7B=VALUE"},
		problemsOf(t, err))

	opts.Params["HomeFileSystem4E5F6A7B"] = "fs-0a1b2c3d4e5f67890"
	d, err := CloudFormation(data, opts)
	require.NoError(t, err)
	valid(t, d)
	golden(t, "cdk-compute.json", d.JSON)
	s := d.Document.Stages.NodeBootstrapped[0]
	assert.Equal(t, "s3://cdk-hnb659fds-assets-111122223333-us-east-1/mount-efs.sh", s.ScriptSource.ScriptLocation)
	assert.Equal(t, strings.ToLower("6B86B273FF34FCE19D6B804EFF5A3F5747ADA4EAA22F1D49C01E52DDB7875B4B"), s.ScriptSource.Checksum)
	assert.Equal(t, []string{"fs-0a1b2c3d4e5f67890", "/home"}, s.Arguments)
}

// TestCloudFormationErrors: problems of the template or of the converted document are
// reported at their template path.
func TestCloudFormationErrors(t *testing.T) {
	tmpl := func(actions string) []byte {
		return []byte("Resources:\n  Group:\n    Type: AWS::PCS::ComputeNodeGroup\n    Properties:\n      NodeLifecycleActions:\n" + actions)
	}
	const p = "Resources.Group.Properties.NodeLifecycleActions"
	cases := []struct {
		name, actions string
		want          []string
	}{
		{"an API rule", "        Stages:\n          NodeReady:\n            - Name: a\n              ScriptSource: {ScriptLocation: s3://bucket/a.sh}\n              OnError: STOP\n",
			[]string{p + `.Stages.NodeReady[0].OnError: must be one of TERMINATE, STOP_SEQUENCE, CONTINUE, got "STOP" (did you mean "STOP_SEQUENCE"?)`}},
		{"the API's https pattern", "        Stages:\n          NodeReady:\n            - Name: a\n              ScriptSource: {ScriptLocation: \"https://10.0.0.5/a.sh\"}\n",
			[]string{p + `.Stages.NodeReady[0].ScriptSource.ScriptLocation: host "10.0.0.5" is an IP address: the PCS API requires a DNS name with a top-level domain`}},
		{"the API spelling", "        stages:\n          nodeReady: []\n",
			[]string{p + `.stages: unknown property (did you mean "Stages"? CloudFormation spells it in PascalCase)`}},
		{"an unknown property", "        Stages:\n          NodeStarted: []\n",
			[]string{p + ".Stages.NodeStarted: unknown property; stages properties are NodeBootstrapped, NodeReady"}},
		{"a converted document without a stage", "        Stages: {}\n",
			[]string{p + ".Stages: must contain at least one stage: nodeBootstrapped or nodeReady"}},
		{"an unknown function", "        Stages:\n          NodeReady:\n            - Name: !GetAZs ''\n              ScriptSource: {ScriptLocation: s3://bucket/a.sh}\n",
			[]string{p + ".Stages.NodeReady[0].Name: !GetAZs is not supported here: give the value itself"}},
		{"a condition missing", "        Stages:\n          NodeReady:\n            - !If [Nope, {Name: a}, !Ref AWS::NoValue]\n",
			[]string{p + ".Stages.NodeReady[0]: condition Nope is not in the template's Conditions"}},
		{"an import", "        Stages:\n          NodeReady:\n            - Name: a\n              ScriptSource: {ScriptLocation: !ImportValue shared-scripts-location}\n",
			[]string{p + ".Stages.NodeReady[0].ScriptSource.ScriptLocation: !ImportValue shared-scripts-location: another stack's export is not in this template: give --param Import:shared-scripts-location=VALUE"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := CloudFormation(tmpl(tc.actions), CloudFormationOptions{})
			assert.Equal(t, tc.want, problemsOf(t, err))
		})
	}
	t.Run("not a template", func(t *testing.T) {
		_, err := CloudFormation([]byte("Scheduling:\n  SlurmQueues: []\n"), CloudFormationOptions{})
		assert.Equal(t, []string{"Resources: missing: this is not a CloudFormation template"}, problemsOf(t, err))
		_, err = CloudFormation([]byte("Resources: {A: {Type: AWS::S3::Bucket}}"), CloudFormationOptions{})
		assert.Equal(t, []string{"Resources: no AWS::PCS::ComputeNodeGroup in the template"}, problemsOf(t, err))
		_, err = CloudFormation([]byte("{\"Resources\": ["), CloudFormationOptions{})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "$: not YAML or JSON: ")
	})
	t.Run("JSON indented with tabs", func(t *testing.T) {
		d, err := CloudFormation([]byte("{\n\t\"Resources\": {\n\t\t\"G\": {\n\t\t\t\"Type\": \"AWS::PCS::ComputeNodeGroup\",\n\t\t\t\"Properties\": {\"NodeLifecycleActions\": "+
			"{\"Stages\": {\"NodeReady\": [{\"Name\": \"a\", \"ScriptSource\": {\"ScriptLocation\": \"s3://bucket/a.sh\"}}]}}}\n\t\t}\n\t}\n}\n"), CloudFormationOptions{})
		require.NoError(t, err)
		assert.Equal(t, "a", d.Document.Stages.NodeReady[0].Name)
	})
	t.Run("an import given", func(t *testing.T) {
		d, err := CloudFormation(tmpl("        Stages:\n          NodeReady:\n            - Name: a\n              ScriptSource: {ScriptLocation: !ImportValue shared-scripts-location}\n"),
			CloudFormationOptions{Params: map[string]string{"Import:shared-scripts-location": "s3://shared-bucket/a.sh"}})
		require.NoError(t, err)
		assert.Equal(t, "s3://shared-bucket/a.sh", d.Document.Stages.NodeReady[0].ScriptSource.ScriptLocation)
	})
}
