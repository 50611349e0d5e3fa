package source

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestIAMDoc: the policies of docs/iam.md are valid JSON and grant what the messages of this
// package tell an administrator the role needs (s3:GetObject, s3:GetObjectVersion,
// s3:ListBucket), plus the evidence upload's s3:PutObject.
func TestIAMDoc(t *testing.T) {
	data, err := os.ReadFile("../../docs/iam.md")
	require.NoError(t, err)
	blocks := regexp.MustCompile("(?s)```json\n(.*?)```").FindAllStringSubmatch(string(data), -1)
	require.Len(t, blocks, 2, "the instance role's policy and report's")
	type statement struct {
		Effect   string
		Action   any
		Resource string
	}
	granted := map[string]string{}
	for _, b := range blocks {
		var p struct {
			Version   string
			Statement []statement
		}
		require.NoError(t, json.Unmarshal([]byte(b[1]), &p), b[1])
		require.Equal(t, "2012-10-17", p.Version)
		for _, s := range p.Statement {
			require.Equal(t, "Allow", s.Effect)
			var actions []string
			switch a := s.Action.(type) {
			case string:
				actions = []string{a}
			case []any:
				for _, x := range a {
					actions = append(actions, x.(string))
				}
			}
			for _, a := range actions {
				granted[a] = s.Resource
			}
		}
	}
	for _, a := range []string{"s3:GetObject", "s3:GetObjectVersion", "s3:ListBucket", "s3:PutObject"} {
		require.Contains(t, granted, a)
	}
	require.True(t, strings.HasSuffix(granted["s3:GetObjectVersion"], "/*"), "an object action on objects")
	require.False(t, strings.Contains(granted["s3:ListBucket"], "/"), "ListBucket is on the bucket")

	// The message names the same actions.
	e := &Error{Location: "s3://b/k", Kind: Forbidden, Bucket: "b", Key: "k", VersionID: "v1"}
	for _, a := range []string{"s3:GetObject", "s3:GetObjectVersion", "s3:ListBucket"} {
		require.Contains(t, e.Error(), a)
	}
}
