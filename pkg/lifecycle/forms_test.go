package lifecycle

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDecodeForms: each public spelling of the document is accepted and named; paths point
// into the file as written; anything else is refused with its JSON path.
func TestDecodeForms(t *testing.T) {
	bare := withFields("")
	cases := []struct {
		name string
		doc  string
		form Form
		errs []string
	}{
		{"bare document", bare, FormDocument, nil},
		{"wrapped", `{"nodeLifecycleActions":` + bare + `}`, FormWrapped, nil},
		{"get-compute-node-group output", `{"computeNodeGroup":{"name":"c7i","id":"pcs_x","status":"ACTIVE",` +
			`"scalingConfiguration":{"minInstanceCount":0},"nodeLifecycleActions":` + bare + `,"errorInfo":[]}}`, FormComputeNodeGroup, nil},
		{"group fields are not judged", `{"computeNodeGroup":{"nodeLifecycleActions":` + bare + `,"whatever":[1,{"x":null}]}}`, FormComputeNodeGroup, nil},
		{"group paths point into the file", `{"computeNodeGroup":{"nodeLifecycleActions":{"stages":{"nodeReady":[{"name":"s","scriptSource":{"scriptLocation":"http://x/y"}}]}}}}`,
			FormComputeNodeGroup, []string{"computeNodeGroup.nodeLifecycleActions.stages.nodeReady[0].scriptSource.scriptLocation: http:// is not accepted: use https:// or s3://"}},
		{"group without actions", `{"computeNodeGroup":{"name":"c7i"}}`, FormComputeNodeGroup,
			[]string{"computeNodeGroup.nodeLifecycleActions: required: this compute node group has no node lifecycle actions"}},
		{"group with null actions", `{"computeNodeGroup":{"nodeLifecycleActions":null}}`, FormComputeNodeGroup,
			[]string{"computeNodeGroup.nodeLifecycleActions: required: this compute node group has no node lifecycle actions"}},
		{"group not an object", `{"computeNodeGroup":[]}`, FormComputeNodeGroup, []string{"computeNodeGroup: must be an object, got array"}},
		{"actions not an object", `{"computeNodeGroup":{"nodeLifecycleActions":"s3://b/x.json"}}`, FormComputeNodeGroup,
			[]string{"computeNodeGroup.nodeLifecycleActions: must be an object, got string"}},
		{"something beside the group", `{"computeNodeGroup":{"nodeLifecycleActions":` + bare + `},"ResponseMetadata":{}}`, FormComputeNodeGroup,
			[]string{"ResponseMetadata: unknown field (the output of aws pcs get-compute-node-group holds only computeNodeGroup)"}},
		{"stages beside the group", `{"computeNodeGroup":{"nodeLifecycleActions":` + bare + `},"stages":{}}`, FormComputeNodeGroup,
			[]string{"stages: unknown field (it belongs inside computeNodeGroup.nodeLifecycleActions)"}},
		{"a --cli-input-json request", `{"clusterIdentifier":"research","computeNodeGroupName":"c7i","nodeLifecycleActions":` + bare + `}`, FormWrapped, []string{
			`clusterIdentifier: unknown field (this looks like a --cli-input-json request: give its nodeLifecycleActions alone, or as {"nodeLifecycleActions": {...}})`,
			`computeNodeGroupName: unknown field (this looks like a --cli-input-json request: give its nodeLifecycleActions alone, or as {"nodeLifecycleActions": {...}})`}},
		{"a CloudFormation property", `{"NodeLifecycleActions":{}}`, FormDocument, []string{
			`NodeLifecycleActions: unknown field (did you mean "nodeLifecycleActions"? a CloudFormation template's PascalCase properties are converted by "pcs-lifecycle convert cloudformation")`,
			"stages: required"}},
		{"a CloudFormation template", `{"AWSTemplateFormatVersion":"2010-09-09","Resources":{}}`, FormDocument, []string{
			`AWSTemplateFormatVersion: unknown field (this looks like a CloudFormation template: "pcs-lifecycle convert cloudformation" writes its node lifecycle actions as a document)`,
			`Resources: unknown field (this looks like a CloudFormation template: "pcs-lifecycle convert cloudformation" writes its node lifecycle actions as a document)`,
			"stages: required"}},
		{"not an object", `[]`, "", []string{"$: must be an object, got array"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Decode([]byte(tc.doc), Options{})
			assert.Equal(t, tc.form, d.Form)
			assert.Equal(t, tc.errs, problems(t, err))
			if tc.errs == nil {
				require.NotNil(t, d.Document)
				want, _, err := Parse([]byte(bare), Options{})
				require.NoError(t, err)
				assert.Equal(t, want, d.Document, "the same document whatever its form")
			} else {
				assert.Nil(t, d.Document)
			}
		})
	}
	assert.Contains(t, FormComputeNodeGroup.Describe(), "get-compute-node-group")
	assert.Contains(t, FormDocument.Describe(), "create-compute-node-group")
}

// TestSyntaxCauses: a JSON syntax error names the usual mistake, where it is.
func TestSyntaxCauses(t *testing.T) {
	cases := []struct{ name, doc, want string }{
		{"trailing comma in an array", "{\"stages\": {\"nodeReady\": [{},\n]}}", "line 1, column 29: trailing comma before \"]\": JSON allows no comma after the last item"},
		{"trailing comma in an object", `{"stages": {},}`, `line 1, column 14: trailing comma before "}": JSON allows no comma after the last item`},
		{"missing comma between members", "{\"a\": 1\n \"b\": 2}", "line 2, column 2: missing comma between two members of an object"},
		{"missing comma between items", `{"a": ["x" "y"]}`, "line 1, column 12: missing comma between two items of an array"},
		{"missing colon", `{"a" 1}`, "line 1, column 6: missing ':' between a key and its value"},
		{"single quotes", `{'stages': {}}`, "line 1, column 2: single quotes: JSON strings and keys take double quotes"},
		{"line comment", "{\n // the stages\n \"stages\": {}}", "line 2, column 2: a comment: JSON has no comments"},
		{"hash comment", "# config\n{}", "line 1, column 1: a comment: JSON has no comments"},
		{"unquoted key", `{stages: {}}`, `line 1, column 2: unquoted key "stages": keys take double quotes`},
		{"unquoted value", `{"scriptCachingPolicy": CACHE_ONCE}`, `line 1, column 25: unquoted text "CACHE_ONCE": string values take double quotes`},
		{"Python literal", `{"stages": None}`, `line 1, column 12: "None": JSON writes an absent value as null`},
		{"capitalised literal", `{"a": True}`, `line 1, column 7: "True": JSON's literals are true, false and null, in lowercase`},
		{"raw line break in a string", "{\"a\": \"x\ny\"}", "line 1, column 9: a string holds a raw control character (a line break or tab must be written \\n or \\t), or is not closed on its line"},
		{"unclosed array", "{\"stages\": {\"nodeReady\": [\n{}", "line 2, column 3: the document ends before the \"[\" opened at line 1, column 26 is closed"},
		{"brackets inside strings do not count", `{"a": "[{"`, `line 1, column 11: the document ends before the "{" opened at line 1, column 1 is closed`},
		{"YAML", "stages:\n  nodeReady: []\n", `line 1, column 1: not JSON (YAML is not read here; "pcs-lifecycle convert" reads ParallelCluster and CloudFormation YAML)`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := Parse([]byte(tc.doc), Options{})
			assert.Equal(t, []string{"$: invalid JSON: " + tc.want}, problems(t, err))
		})
	}
}

// TestLintWarnings: advice about valid documents, each at the path it concerns.
func TestLintWarnings(t *testing.T) {
	src := func(loc string) string {
		return `"scriptSource":{"scriptLocation":"` + loc + `","checksum":"` + hex64 + `"}`
	}
	cases := []struct {
		name  string
		doc   string
		warns []string
	}{
		{"REFRESH_ON_REBOOT with only FIRST_BOOT_ONLY scripts",
			`{"scriptCachingPolicy":"REFRESH_ON_REBOOT","stages":{"nodeBootstrapped":[{"name":"a",` + src("s3://bucket/a") + `}]}}`,
			[]string{"scriptCachingPolicy: REFRESH_ON_REBOOT has no effect: every script is FIRST_BOOT_ONLY, so later boots run (and download) nothing"}},
		{"REFRESH_ON_REBOOT with an EVERY_BOOT script",
			`{"scriptCachingPolicy":"REFRESH_ON_REBOOT","stages":{"nodeBootstrapped":[{"name":"a",` + src("s3://bucket/a") + `},{"name":"b",` + src("s3://bucket/b") + `,"executionPolicy":"EVERY_BOOT"}]}}`,
			nil},
		{"the same location twice, other arguments",
			`{"stages":{"nodeBootstrapped":[{"name":"a",` + src("s3://bucket/a") + `,"arguments":["1"]}],"nodeReady":[{"name":"b",` + src("s3://bucket/a") + `,"arguments":["2"]}]}}`,
			[]string{"stages.nodeReady[0].scriptSource.scriptLocation: same scriptLocation as stages.nodeBootstrapped[0]: the same object is downloaded and run twice"}},
		{"the same location in two versions is not the same object",
			`{"stages":{"nodeBootstrapped":[{"name":"a","scriptSource":{"scriptLocation":"s3://bucket/a","checksum":"` + hex64 + `","s3VersionId":"v1"}},` +
				`{"name":"b","scriptSource":{"scriptLocation":"s3://bucket/a","checksum":"` + hex64 + `","s3VersionId":"v2"}}]}}`,
			nil},
		{"a nodeReady mount", withScripts(`{"name":"storage",` + src("s3://bucket/mount-fsx.sh") + `}`),
			[]string{p0 + ": looks like it prepares what jobs need (a mount), but Slurm may start jobs on the node while nodeReady runs: move it to nodeBootstrapped, " +
				"or keep jobs off until nodeReady ends with --hold-jobs-until-ready or the Slurm prolog (scripts/slurm-prolog.sh; docs/systemd-and-slurm.md)"}},
		{"a nodeReady module set-up, by its arguments", withScripts(`{"name":"software",` + src("https://repo.example.com/setup.sh?v=2") + `,"arguments":["--lmod"]}`),
			[]string{p0 + ": looks like it prepares what jobs need (an environment module), but Slurm may start jobs on the node while nodeReady runs: move it to nodeBootstrapped, " +
				"or keep jobs off until nodeReady ends with --hold-jobs-until-ready or the Slurm prolog (scripts/slurm-prolog.sh; docs/systemd-and-slurm.md)"}},
		{"stages in either order", `{"stages":{"nodeReady":[{"name":"mount-fsx",` + src("s3://bucket/a") + `}],"nodeBootstrapped":[{"name":"b",` + src("s3://bucket/a") + `}]}}`,
			[]string{p0 + ": looks like it prepares what jobs need (a mount), but Slurm may start jobs on the node while nodeReady runs: move it to nodeBootstrapped, " +
				"or keep jobs off until nodeReady ends with --hold-jobs-until-ready or the Slurm prolog (scripts/slurm-prolog.sh; docs/systemd-and-slurm.md)",
				"stages.nodeBootstrapped[0].scriptSource.scriptLocation: same scriptLocation as stages.nodeReady[0]: the same object is downloaded and run twice, with the same arguments"}},
		{"a nodeBootstrapped mount is where it belongs", `{"stages":{"nodeBootstrapped":[{"name":"mount-efs",` + src("s3://bucket/mount.sh") + `}]}}`, nil},
		{"words, not substrings", withScripts(`{"name":"unmount-scratch-amount",` + src("s3://bucket/paramount.sh") + `}`), nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, warns, err := Parse([]byte(tc.doc), Options{})
			require.NoError(t, err)
			assert.Equal(t, tc.warns, lines(warns))
		})
	}
	t.Run("an invalid document gets no advice", func(t *testing.T) {
		_, warns, err := Parse([]byte(`{"scriptCachingPolicy":"REFRESH_ON_REBOOT","stages":{"nodeReady":[{"name":"mount",`+src("s3://bucket/a")+`,"onError":"X"}]}}`), Options{})
		require.Error(t, err)
		assert.Empty(t, warns)
	})
}
