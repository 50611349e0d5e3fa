package convert

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// noValue is what !Ref AWS::NoValue evaluates to: the property is left out.
type noValue struct{}

// unresolved stands for a value that could not be evaluated; its error is already recorded,
// so nothing built from it is reported again.
type unresolved struct{}

// evaluator evaluates CloudFormation intrinsic functions over one template.
type evaluator struct {
	root   *yaml.Node
	params map[string]string
	used   map[string]bool
	probs  problems

	conds    map[string]bool
	condBusy map[string]bool
}

func newEvaluator(root *yaml.Node, params map[string]string) *evaluator {
	if params == nil {
		params = map[string]string{}
	}
	return &evaluator{root: root, params: params, used: map[string]bool{}, conds: map[string]bool{}, condBusy: map[string]bool{}}
}

func (e *evaluator) section(name string) *yaml.Node { return get(e.root, name) }

// param looks up a --param, recording its use.
func (e *evaluator) param(k string) (string, bool) {
	v, ok := e.params[k]
	if ok {
		e.used[k] = true
	}
	return v, ok
}

// intrinsic names a node that calls a function: a short-form tag (!Sub) or a one-key mapping
// (Fn::Sub, Ref, Condition). arg is the function's argument.
func intrinsic(n *yaml.Node) (fn string, arg *yaml.Node, ok bool) {
	if strings.HasPrefix(n.Tag, "!") && !strings.HasPrefix(n.Tag, "!!") {
		name := n.Tag[1:]
		c := *n
		c.Tag = ""
		if c.Kind == yaml.ScalarNode {
			c.Tag = "!!str"
		}
		switch name {
		case "Ref", "Condition":
			return name, &c, true
		}
		return "Fn::" + name, &c, true
	}
	if n.Kind == yaml.MappingNode && len(n.Content) == 2 {
		k := n.Content[0].Value
		if k == "Ref" || k == "Condition" || strings.HasPrefix(k, "Fn::") {
			return k, resolveAlias(n.Content[1]), true
		}
	}
	return "", nil, false
}

// short is how messages name a function: its short form.
func short(fn string) string { return "!" + strings.TrimPrefix(fn, "Fn::") }

// eval evaluates node n at path into plain values: string, bool, []any, map[string]any, nil,
// or unresolved.
func (e *evaluator) eval(n *yaml.Node, path string) any {
	n = resolveAlias(n)
	if n == nil {
		return nil
	}
	if fn, arg, ok := intrinsic(n); ok {
		return e.call(fn, arg, path)
	}
	switch n.Kind {
	case yaml.MappingNode:
		m := map[string]any{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i].Value
			v := e.eval(n.Content[i+1], field(path, k))
			if _, skip := v.(noValue); !skip {
				m[k] = v
			}
		}
		return m
	case yaml.SequenceNode:
		list := []any{}
		for i, el := range n.Content {
			v := e.eval(el, index(path, i))
			if _, skip := v.(noValue); !skip {
				list = append(list, v)
			}
		}
		return list
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return nil
		}
		return n.Value
	}
	return nil
}

// str evaluates n and requires a string (numbers and booleans as written count as text).
func (e *evaluator) str(n *yaml.Node, path, what string) (string, bool) {
	switch v := e.eval(n, path).(type) {
	case string:
		return v, true
	case bool:
		return strconv.FormatBool(v), true
	case unresolved:
		return "", false
	default:
		e.probs.add(path, "%s must be a string, got %s", what, kindOf(v))
		return "", false
	}
}

func kindOf(v any) string {
	switch v.(type) {
	case []any:
		return "a list"
	case map[string]any:
		return "a mapping"
	case nil:
		return "null"
	case noValue:
		return "AWS::NoValue"
	}
	return fmt.Sprintf("%T", v)
}

// args requires the argument of fn to be a list of n items.
func (e *evaluator) args(fn string, arg *yaml.Node, path string, n int) ([]*yaml.Node, bool) {
	if arg.Kind != yaml.SequenceNode || len(arg.Content) != n {
		e.probs.add(path, "%s takes a list of %d items", short(fn), n)
		return nil, false
	}
	out := make([]*yaml.Node, n)
	for i, c := range arg.Content {
		out[i] = resolveAlias(c)
	}
	return out, true
}

func (e *evaluator) call(fn string, arg *yaml.Node, path string) any {
	switch fn {
	case "Ref":
		return e.callRef(fn, arg, path)
	case "Fn::Sub":
		return e.sub(arg, path)
	case "Fn::GetAtt":
		return e.callGetAtt(fn, arg, path)
	case "Fn::Join":
		return e.callJoin(fn, arg, path)
	case "Fn::Select":
		return e.callSelect(fn, arg, path)
	case "Fn::Split":
		return e.callSplit(fn, arg, path)
	case "Fn::If":
		return e.callIf(fn, arg, path)
	case "Fn::Equals", "Fn::Not", "Fn::And", "Fn::Or", "Condition":
		return e.callBoolean(fn, arg, path)
	case "Fn::FindInMap":
		return e.callFindInMap(fn, arg, path)
	case "Fn::Base64":
		return e.callBase64(fn, arg, path)
	case "Fn::ImportValue":
		return e.callImportValue(fn, arg, path)
	}
	e.probs.add(path, "%s is not supported here: give the value itself", short(fn))
	return unresolved{}
}

func (e *evaluator) callRef(fn string, arg *yaml.Node, path string) any {
	name := scalar(arg)
	if name == "" {
		e.probs.add(path, "!Ref takes a name")
		return unresolved{}
	}
	return e.ref(name, path)
}

func (e *evaluator) callGetAtt(fn string, arg *yaml.Node, path string) any {
	var res, attr string
	switch arg.Kind {
	case yaml.ScalarNode:
		res, attr, _ = strings.Cut(arg.Value, ".")
	case yaml.SequenceNode:
		if len(arg.Content) == 2 {
			res = scalar(arg.Content[0])
			a, ok := e.str(arg.Content[1], path, "the attribute of !GetAtt")
			if !ok {
				return unresolved{}
			}
			attr = a
		}
	}
	if res == "" || attr == "" {
		e.probs.add(path, "!GetAtt takes RESOURCE.ATTRIBUTE or [RESOURCE, ATTRIBUTE]")
		return unresolved{}
	}
	return e.getAtt(res, attr, path)
}

func (e *evaluator) callJoin(fn string, arg *yaml.Node, path string) any {
	a, ok := e.args(fn, arg, path, 2)
	if !ok {
		return unresolved{}
	}
	delim, ok := e.str(a[0], path, "the delimiter of !Join")
	if !ok {
		return unresolved{}
	}
	list, ok := e.list(a[1], path, "!Join")
	if !ok {
		return unresolved{}
	}
	parts := make([]string, 0, len(list))
	for _, el := range list {
		s, ok := e.text(el, path, "an item of !Join")
		if !ok {
			return unresolved{}
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, delim)
}

func (e *evaluator) callSelect(fn string, arg *yaml.Node, path string) any {
	a, ok := e.args(fn, arg, path, 2)
	if !ok {
		return unresolved{}
	}
	is, ok := e.str(a[0], path, "the index of !Select")
	if !ok {
		return unresolved{}
	}
	i, err := strconv.Atoi(is)
	list, lok := e.list(a[1], path, "!Select")
	if !lok {
		return unresolved{}
	}
	if err != nil || i < 0 || i >= len(list) {
		e.probs.add(path, "!Select index %s is outside the list of %d", is, len(list))
		return unresolved{}
	}
	return list[i]
}

func (e *evaluator) callSplit(fn string, arg *yaml.Node, path string) any {
	a, ok := e.args(fn, arg, path, 2)
	if !ok {
		return unresolved{}
	}
	delim, ok1 := e.str(a[0], path, "the delimiter of !Split")
	s, ok2 := e.str(a[1], path, "the string of !Split")
	if !ok1 || !ok2 {
		return unresolved{}
	}
	var out []any
	for _, p := range strings.Split(s, delim) {
		out = append(out, p)
	}
	return out
}

func (e *evaluator) callIf(fn string, arg *yaml.Node, path string) any {
	a, ok := e.args(fn, arg, path, 3)
	if !ok {
		return unresolved{}
	}
	name := scalar(a[0])
	c, known := e.condition(name, path)
	if !known {
		return unresolved{}
	}
	if c {
		return e.eval(a[1], path)
	}
	return e.eval(a[2], path)
}

func (e *evaluator) callBoolean(fn string, arg *yaml.Node, path string) any {
	b, known := e.boolean(fn, arg, path)
	if !known {
		return unresolved{}
	}
	return b
}

func (e *evaluator) callFindInMap(fn string, arg *yaml.Node, path string) any {
	if arg.Kind != yaml.SequenceNode || len(arg.Content) < 3 {
		e.probs.add(path, "!FindInMap takes [MAP, TOP_KEY, SECOND_KEY]")
		return unresolved{}
	}
	var ks [3]string
	for i := range ks {
		s, ok := e.str(arg.Content[i], path, "a key of !FindInMap")
		if !ok {
			return unresolved{}
		}
		ks[i] = s
	}
	v := get(get(get(e.section("Mappings"), ks[0]), ks[1]), ks[2])
	if v == nil {
		e.probs.add(path, "!FindInMap: Mappings.%s.%s.%s is not in the template", ks[0], ks[1], ks[2])
		return unresolved{}
	}
	return e.eval(v, "Mappings."+ks[0]+"."+ks[1]+"."+ks[2])
}

func (e *evaluator) callBase64(fn string, arg *yaml.Node, path string) any {
	s, ok := e.str(arg, path, "the argument of !Base64")
	if !ok {
		return unresolved{}
	}
	return base64.StdEncoding.EncodeToString([]byte(s))
}

func (e *evaluator) callImportValue(fn string, arg *yaml.Node, path string) any {
	name, ok := e.str(arg, path, "the export name of !ImportValue")
	if !ok {
		return unresolved{}
	}
	if v, ok := e.param("Import:" + name); ok {
		return v
	}
	e.probs.add(path, "!ImportValue %s: another stack's export is not in this template: give --param Import:%s=VALUE", name, name)
	return unresolved{}
}

// list evaluates n to a list (a parameter of a List type, !Split, !GetAZs … or a literal list).
func (e *evaluator) list(n *yaml.Node, path, what string) ([]any, bool) {
	switch v := e.eval(n, path).(type) {
	case []any:
		for _, el := range v {
			if _, bad := el.(unresolved); bad {
				return nil, false
			}
		}
		return v, true
	case unresolved:
		return nil, false
	default:
		e.probs.add(path, "%s takes a list, got %s", what, kindOf(v))
		return nil, false
	}
}

// text is a string item of an evaluated list.
func (e *evaluator) text(v any, path, what string) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case bool:
		return strconv.FormatBool(v), true
	case unresolved:
		return "", false
	}
	e.probs.add(path, "%s must be a string, got %s", what, kindOf(v))
	return "", false
}

// pseudo parameters and how to derive the ones that follow from the region.
func (e *evaluator) pseudo(name, path string) any {
	if v, ok := e.param(name); ok {
		return v
	}
	region, haveRegion := e.params["AWS::Region"]
	switch name {
	case "AWS::NoValue":
		return noValue{}
	case "AWS::Partition":
		if haveRegion {
			e.used["AWS::Region"] = true
			switch {
			case strings.HasPrefix(region, "cn-"):
				return "aws-cn"
			case strings.HasPrefix(region, "us-gov-"):
				return "aws-us-gov"
			}
			return "aws"
		}
	case "AWS::URLSuffix":
		if haveRegion {
			e.used["AWS::Region"] = true
			if strings.HasPrefix(region, "cn-") {
				return "amazonaws.com.cn"
			}
			return "amazonaws.com"
		}
	case "AWS::Region", "AWS::AccountId", "AWS::StackName", "AWS::StackId":
	default:
		e.probs.add(path, "%s is not a pseudo parameter CloudFormation defines", name)
		return unresolved{}
	}
	hint := "--param " + name + "=VALUE"
	if name == "AWS::Partition" || name == "AWS::URLSuffix" {
		hint += " (or --param AWS::Region=REGION)"
	}
	e.probs.add(path, "%s is known only when the stack is deployed: give %s", name, hint)
	return unresolved{}
}

// ref is !Ref name: a pseudo parameter, a template parameter or a resource.
func (e *evaluator) ref(name, path string) any {
	if strings.HasPrefix(name, "AWS::") {
		return e.pseudo(name, path)
	}
	if p := get(e.section("Parameters"), name); p != nil {
		v, ok := e.param(name)
		if !ok {
			d := get(p, "Default")
			if d == nil {
				e.probs.add(path, "!Ref %s: parameter %s has no Default: give --param %s=VALUE", name, name, name)
				return unresolved{}
			}
			v = scalar(d)
			if d.Kind == yaml.SequenceNode { // a list Default written as a YAML list
				return e.eval(d, "Parameters."+name+".Default")
			}
		}
		if t := scalar(get(p, "Type")); t == "CommaDelimitedList" || strings.HasPrefix(t, "List<") {
			var out []any
			for _, s := range strings.Split(v, ",") {
				out = append(out, strings.TrimSpace(s))
			}
			return out
		}
		return v
	}
	if r := get(e.section("Resources"), name); r != nil {
		if v, ok := e.param(name); ok {
			return v
		}
		e.probs.add(path, "!Ref %s: the ID of resource %s (%s) is known only after deployment: give --param %s=VALUE",
			name, name, scalar(get(r, "Type")), name)
		return unresolved{}
	}
	if v, ok := e.param(name); ok {
		return v
	}
	e.probs.add(path, "!Ref %s: no parameter or resource %s in the template (or give --param %s=VALUE)", name, name, name)
	return unresolved{}
}

// getAtt is !GetAtt res.attr, which only a --param can give.
func (e *evaluator) getAtt(res, attr, path string) any {
	key := res + "." + attr
	if v, ok := e.param(key); ok {
		return v
	}
	r := get(e.section("Resources"), res)
	if r == nil {
		e.probs.add(path, "!GetAtt %s: no resource %s in the template (or give --param %s=VALUE)", key, res, key)
		return unresolved{}
	}
	e.probs.add(path, "!GetAtt %s: an attribute of %s (%s) is known only after deployment: give --param %s=VALUE",
		key, res, scalar(get(r, "Type")), key)
	return unresolved{}
}

// sub is !Sub "text ${Name} ${Res.Attr} ${!Literal}" or !Sub [text, {Name: value}].
func (e *evaluator) sub(arg *yaml.Node, path string) any {
	tmplNode, vars := arg, map[string]any{}
	if arg.Kind == yaml.SequenceNode {
		if len(arg.Content) != 2 {
			e.probs.add(path, "!Sub takes a string, or [STRING, {NAME: VALUE}]")
			return unresolved{}
		}
		tmplNode = resolveAlias(arg.Content[0])
		if m, ok := e.eval(arg.Content[1], path).(map[string]any); ok {
			vars = m
		} else {
			e.probs.add(path, "!Sub: the second item must be a mapping of names to values")
			return unresolved{}
		}
	}
	if tmplNode.Kind != yaml.ScalarNode {
		e.probs.add(path, "!Sub takes a string")
		return unresolved{}
	}
	tmpl := tmplNode.Value
	var b strings.Builder
	failed := false
	for {
		i := strings.Index(tmpl, "${")
		if i < 0 {
			b.WriteString(tmpl)
			break
		}
		b.WriteString(tmpl[:i])
		rest := tmpl[i+2:]
		if strings.HasPrefix(rest, "!") { // ${!Literal} is written as ${Literal}
			b.WriteString("${")
			tmpl = rest[1:]
			continue
		}
		end := strings.IndexByte(rest, '}')
		if end < 0 {
			e.probs.add(path, "!Sub: ${ is not closed")
			return unresolved{}
		}
		name := strings.TrimSpace(rest[:end])
		tmpl = rest[end+1:]
		var v any
		if x, ok := vars[name]; ok {
			v = x
		} else if res, attr, dotted := strings.Cut(name, "."); dotted && !strings.HasPrefix(name, "AWS::") {
			v = e.getAtt(res, attr, path)
		} else {
			v = e.ref(name, path)
		}
		s, ok := e.text(v, path, "${"+name+"}")
		if !ok {
			failed = true
			continue
		}
		b.WriteString(s)
	}
	if failed {
		return unresolved{}
	}
	return b.String()
}

// condition evaluates the template condition name; known is false when it could not be.
func (e *evaluator) condition(name, path string) (value, known bool) {
	if v, ok := e.conds[name]; ok {
		return v, true
	}
	c := get(e.section("Conditions"), name)
	if c == nil {
		e.probs.add(path, "condition %s is not in the template's Conditions", name)
		return false, false
	}
	if e.condBusy[name] {
		e.probs.add(path, "condition %s depends on itself", name)
		return false, false
	}
	e.condBusy[name] = true
	defer delete(e.condBusy, name)
	cpath := "Conditions." + name
	fn, arg, ok := intrinsic(c)
	if !ok {
		e.probs.add(cpath, "a condition must be !Equals, !Not, !And, !Or or !Condition")
		return false, false
	}
	v, known := e.boolean(fn, arg, cpath)
	if known {
		e.conds[name] = v
	}
	return v, known
}

// boolean evaluates a condition function.
func (e *evaluator) boolean(fn string, arg *yaml.Node, path string) (value, known bool) {
	switch fn {
	case "Condition":
		return e.condition(scalar(arg), path)
	case "Fn::Equals":
		a, ok := e.args(fn, arg, path, 2)
		if !ok {
			return false, false
		}
		x, ok1 := e.text(e.eval(a[0], path), path, "an item of !Equals")
		y, ok2 := e.text(e.eval(a[1], path), path, "an item of !Equals")
		return x == y, ok1 && ok2
	case "Fn::Not", "Fn::And", "Fn::Or":
		if arg.Kind != yaml.SequenceNode || len(arg.Content) == 0 {
			e.probs.add(path, "%s takes a list of conditions", short(fn))
			return false, false
		}
		var vals []bool
		for _, c := range arg.Content {
			c = resolveAlias(c)
			cfn, carg, ok := intrinsic(c)
			if !ok {
				e.probs.add(path, "%s takes conditions (!Equals, !Condition, …)", short(fn))
				return false, false
			}
			v, known := e.boolean(cfn, carg, path)
			if !known {
				return false, false
			}
			vals = append(vals, v)
		}
		switch fn {
		case "Fn::Not":
			return !vals[0], true
		case "Fn::And":
			for _, v := range vals {
				if !v {
					return false, true
				}
			}
			return true, true
		default:
			for _, v := range vals {
				if v {
					return true, true
				}
			}
			return false, true
		}
	}
	e.probs.add(path, "%s is not a condition function", short(fn))
	return false, false
}
