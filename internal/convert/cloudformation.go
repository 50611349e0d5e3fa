package convert

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// ComputeNodeGroupType is the CloudFormation resource type converted.
const ComputeNodeGroupType = "AWS::PCS::ComputeNodeGroup"

// CloudFormationOptions choose what is converted and give the values a template cannot.
type CloudFormationOptions struct {
	// Resource is the logical ID of the compute node group; "" when the template has one.
	Resource string
	// Params are the --param values: pseudo parameters (AWS::Region), template parameters and
	// resources' Ref values by name, Resource.Attribute for !GetAtt, Import:NAME for
	// !ImportValue.
	Params map[string]string
}

// cfnNames maps the API spelling to CloudFormation's, level by level (the names never clash).
var cfnNames = map[string]string{
	"scriptCachingPolicy": "ScriptCachingPolicy",
	"stages":              "Stages",
	"nodeBootstrapped":    "NodeBootstrapped",
	"nodeReady":           "NodeReady",
	"name":                "Name",
	"scriptSource":        "ScriptSource",
	"scriptLocation":      "ScriptLocation",
	"checksum":            "Checksum",
	"s3VersionId":         "S3VersionId",
	"arguments":           "Arguments",
	"executionPolicy":     "ExecutionPolicy",
	"onError":             "OnError",
}

// cfnLevels lists the properties each level of NodeLifecycleActions holds.
var cfnLevels = map[string][]string{
	"actions": {"ScriptCachingPolicy", "Stages"},
	"stages":  {"NodeBootstrapped", "NodeReady"},
	"script":  {"Name", "ScriptSource", "Arguments", "ExecutionPolicy", "OnError"},
	"source":  {"ScriptLocation", "Checksum", "S3VersionId"},
}

// CloudFormation converts the NodeLifecycleActions of one AWS::PCS::ComputeNodeGroup of a
// template (YAML or JSON).
func CloudFormation(data []byte, opts CloudFormationOptions) (*Document, error) {
	root, err := parseYAML(data)
	if err != nil {
		return nil, err
	}
	if root.Kind != yaml.MappingNode {
		return nil, &Error{Problems: []string{"$: a CloudFormation template is a mapping with Resources"}}
	}
	e := newEvaluator(root, opts.Params)
	resources := e.section("Resources")
	if resources == nil {
		return nil, &Error{Problems: []string{"Resources: missing: this is not a CloudFormation template"}}
	}
	var groups, withActions []string
	for _, id := range keys(resources) {
		r := get(resources, id)
		if r == nil || r.Kind != yaml.MappingNode || scalar(get(r, "Type")) != ComputeNodeGroupType {
			continue
		}
		groups = append(groups, id)
		if props := get(r, "Properties"); props != nil && get(props, "NodeLifecycleActions") != nil {
			withActions = append(withActions, id)
		}
	}
	id := opts.Resource
	switch {
	case len(groups) == 0:
		return nil, &Error{Problems: []string{"Resources: no " + ComputeNodeGroupType + " in the template"}}
	case id != "" && !contains(groups, id):
		what := "no " + ComputeNodeGroupType + " named " + id
		if get(resources, id) != nil {
			what = id + " is a " + scalar(get(get(resources, id), "Type")) + ", not an " + ComputeNodeGroupType
		}
		return nil, &Error{Problems: []string{fmt.Sprintf("--resource %s: %s; the template's compute node groups: %s", id, what, strings.Join(groups, ", "))}}
	case id == "" && len(withActions) == 1:
		id = withActions[0]
	case id == "" && len(withActions) == 0:
		return nil, &Error{Problems: []string{fmt.Sprintf("Resources: no compute node group has NodeLifecycleActions (compute node groups: %s)", strings.Join(groups, ", "))}}
	case id == "":
		return nil, &Error{Problems: []string{fmt.Sprintf("Resources: %d compute node groups have NodeLifecycleActions (%s): choose one with --resource LOGICAL_ID",
			len(withActions), strings.Join(withActions, ", "))}}
	}
	path := "Resources." + id + ".Properties.NodeLifecycleActions"
	actions := get(get(get(resources, id), "Properties"), "NodeLifecycleActions")
	if actions == nil {
		return nil, &Error{Problems: []string{path + ": missing: compute node group " + id + " has no node lifecycle actions"}}
	}
	var warnings []string
	if c := scalar(get(get(resources, id), "Condition")); c != "" {
		if ok, known := e.condition(c, "Resources."+id+".Condition"); known && !ok {
			warnings = append(warnings, fmt.Sprintf("Resources.%s.Condition: condition %s is false with these parameters: the stack would not create this node group", id, c))
		}
	}
	v := e.eval(actions, path)
	api := e.toAPI(v, path, "actions")
	if err := e.probs.err(); err != nil {
		return nil, err
	}
	for _, k := range sortedKeys(e.params) {
		if !e.used[k] {
			warnings = append(warnings, fmt.Sprintf("--param %s: not used by %s", k, path))
		}
	}
	doc, err := finish(id, api.(map[string]any), warnings, apiToInput(path, cfnNames))
	if err != nil {
		return nil, err
	}
	return doc, nil
}

// toAPI turns an evaluated NodeLifecycleActions value into the API's spelling, checking each
// level's property names. Values are left for lifecycle validation to judge.
func (e *evaluator) toAPI(v any, path, level string) any {
	switch level {
	case "arguments":
		if list, ok := v.([]any); ok {
			out := make([]any, len(list))
			copy(out, list)
			return out
		}
		return v
	case "stage":
		list, ok := v.([]any)
		if !ok {
			return v
		}
		out := make([]any, len(list))
		for i, el := range list {
			out[i] = e.toAPI(el, index(path, i), "script")
		}
		return out
	}
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	out := map[string]any{}
	allowed := cfnLevels[level]
	for _, k := range sortedKeys(m) {
		p := field(path, k)
		if !contains(allowed, k) {
			msg := "unknown property; " + level + " properties are " + strings.Join(allowed, ", ")
			for _, a := range allowed {
				if strings.EqualFold(a, k) {
					msg = fmt.Sprintf("unknown property (did you mean %q? CloudFormation spells it in PascalCase)", a)
				}
			}
			e.probs.add(p, "%s", msg)
			continue
		}
		api := lowerFirst(k)
		switch k {
		case "Stages":
			out[api] = e.toAPI(m[k], p, "stages")
		case "NodeBootstrapped", "NodeReady":
			out[api] = e.toAPI(m[k], p, "stage")
		case "ScriptSource":
			out[api] = e.toAPI(m[k], p, "source")
		case "Arguments":
			out[api] = e.toAPI(m[k], p, "arguments")
		default:
			out[api] = m[k]
		}
	}
	return out
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	if strings.HasPrefix(s, "S3") {
		return "s3" + s[2:]
	}
	return strings.ToLower(s[:1]) + s[1:]
}

// parseYAML reads one YAML (or JSON) document into its root node.
func parseYAML(data []byte) (*yaml.Node, error) {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &Error{Problems: []string{"$: empty document"}}
		}
		return nil, &Error{Problems: []string{"$: not YAML or JSON: " + err.Error()}}
	}
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		return resolveAlias(doc.Content[0]), nil
	}
	return resolveAlias(&doc), nil
}

func resolveAlias(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

// get is the value of key in mapping n (nil when n is not a mapping or lacks it).
func get(n *yaml.Node, key string) *yaml.Node {
	n = resolveAlias(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return resolveAlias(n.Content[i+1])
		}
	}
	return nil
}

// keys are the keys of mapping n, in order.
func keys(n *yaml.Node) []string {
	n = resolveAlias(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	out := make([]string, 0, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		out = append(out, n.Content[i].Value)
	}
	return out
}

// scalar is the text of a plain scalar node ("" for anything else).
func scalar(n *yaml.Node) string {
	n = resolveAlias(n)
	if n == nil || n.Kind != yaml.ScalarNode {
		return ""
	}
	return n.Value
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
