package convert

import (
	"fmt"
	"os"
	"path"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/source"
	"github.com/pcs-lifecycle/pcs-lifecycle/pkg/lifecycle"
)

// ParallelClusterOptions choose what is converted.
type ParallelClusterOptions struct {
	// Queue is the Slurm queue to convert; "" converts every queue with custom actions.
	Queue string
	// EveryBoot keeps ParallelCluster's semantics (run on every boot, download every boot);
	// false makes the scripts FIRST_BOOT_ONLY and cached once.
	EveryBoot bool
	// ScriptsFrom, when set, is a folder holding copies of the scripts (found as try finds
	// them), read to warn about scripts that depend on ParallelCluster's own files.
	ScriptsFrom string
}

// pcStages maps ParallelCluster's custom action events to stages, in boot order.
var pcStages = []struct{ event, stage string }{
	{"OnNodeStart", lifecycle.StageNodeBootstrapped},
	{"OnNodeConfigured", lifecycle.StageNodeReady},
}

// pcOnly says what ParallelCluster-only things a script relies on.
var pcOnly = regexp.MustCompile(`cfnconfig|/etc/parallelcluster|/opt/parallelcluster|\bcfn_[a-z_]+|\$\{?cfn_`)

// ParallelCluster converts the custom actions of a ParallelCluster 3 cluster configuration:
// one document per Slurm queue that has OnNodeStart or OnNodeConfigured actions, in the order
// of the queues. common are the warnings that concern no document in particular (HeadNode,
// LoginNodes, queues without custom actions); each document carries its own.
func ParallelCluster(data []byte, opts ParallelClusterOptions) (docs []*Document, common []string, err error) {
	root, err := parseYAML(data)
	if err != nil {
		return nil, nil, err
	}
	if root.Kind != yaml.MappingNode {
		return nil, nil, &Error{Problems: []string{"$: a ParallelCluster configuration is a mapping with Scheduling"}}
	}
	var p problems
	if ca := get(get(root, "HeadNode"), "CustomActions"); ca != nil {
		for _, ev := range keys(ca) {
			common = append(common, fmt.Sprintf("HeadNode.CustomActions.%s: not converted: a PCS cluster has no head node of yours to run it on "+
				"(the Slurm controller is managed); run it where you manage the cluster from", ev))
		}
	}
	pools := get(get(root, "LoginNodes"), "Pools")
	for i, pool := range seq(pools) {
		if ca := get(pool, "CustomActions"); ca != nil {
			common = append(common, fmt.Sprintf("LoginNodes.Pools[%d].CustomActions (pool %s): not converted: PCS login nodes are a compute node group of their own; "+
				"convert them into that group's document by hand", i, scalar(get(pool, "Name"))))
		}
	}
	if s := scalar(get(get(root, "Scheduling"), "Scheduler")); s != "" && s != "slurm" {
		return nil, nil, &Error{Problems: []string{fmt.Sprintf("Scheduling.Scheduler: %s: PCS runs Slurm; only Slurm queues are converted", s)}}
	}
	queuesNode := get(get(root, "Scheduling"), "SlurmQueues")
	queues := seq(queuesNode)
	if len(queues) == 0 {
		return nil, nil, &Error{Problems: []string{"Scheduling.SlurmQueues: missing or empty: this is not a ParallelCluster 3 cluster configuration"}}
	}
	var names []string
	for _, q := range queues {
		names = append(names, scalar(get(q, "Name")))
	}
	if opts.Queue != "" && !contains(names, opts.Queue) {
		return nil, nil, &Error{Problems: []string{fmt.Sprintf("--queue %s: no such queue; the queues: %s", opts.Queue, strings.Join(names, ", "))}}
	}
	var notes []string // about queues that gave no document
	for i, q := range queues {
		name := names[i]
		if opts.Queue != "" && name != opts.Queue {
			continue
		}
		qpath := fmt.Sprintf("Scheduling.SlurmQueues[%d]", i)
		doc, warns := convertQueue(q, qpath, name, opts, &p)
		if doc == nil {
			notes = append(notes, warns...)
			continue
		}
		doc.Warnings = append(warns, doc.Warnings...)
		docs = append(docs, doc)
	}
	if err := p.err(); err != nil {
		return nil, nil, err
	}
	if len(docs) == 0 {
		msg := "Scheduling.SlurmQueues: no queue has OnNodeStart or OnNodeConfigured custom actions: nothing to convert"
		if opts.Queue != "" {
			msg = fmt.Sprintf("--queue %s: it has no OnNodeStart or OnNodeConfigured custom actions: nothing to convert", opts.Queue)
		}
		return nil, nil, &Error{Problems: append([]string{msg}, notes...)}
	}
	return docs, append(common, notes...), nil
}

// convertQueue converts one queue; nil when it has nothing to convert (warns then says why).
func convertQueue(q *yaml.Node, qpath, name string, opts ParallelClusterOptions, p *problems) (*Document, []string) {
	var warns []string
	ca := get(q, "CustomActions")
	if ca == nil {
		return nil, []string{fmt.Sprintf("%s (queue %s): no CustomActions: no document", qpath, name)}
	}
	capath := qpath + ".CustomActions"
	policy, caching := lifecycle.EveryBoot, lifecycle.RefreshOnReboot
	if !opts.EveryBoot {
		policy, caching = lifecycle.FirstBootOnly, lifecycle.CacheOnce
	}
	for _, ev := range keys(ca) {
		switch ev {
		case "OnNodeStart", "OnNodeConfigured":
		case "OnNodeUpdated":
			warns = append(warns, fmt.Sprintf("%s.OnNodeUpdated: not converted: PCS runs no script when a compute node group is updated "+
				"(its nodes are replaced, and run nodeBootstrapped and nodeReady again)", capath))
		default:
			p.add(field(capath, ev), "unknown custom action event; ParallelCluster's are OnNodeStart, OnNodeConfigured and OnNodeUpdated")
		}
	}
	stages := map[string]any{}
	used := map[string]bool{}
	// where maps an API stage name to the ParallelCluster path of its actions, to report the
	// converted document's problems where they come from.
	where := map[string][]string{}
	for _, s := range pcStages {
		act := get(ca, s.event)
		if act == nil {
			continue
		}
		apath := field(capath, s.event)
		actions := pcActions(act, apath, p)
		var scripts []any
		for _, a := range actions {
			nm := uniqueName(a.script, used)
			scripts = append(scripts, map[string]any{
				"name":            nm,
				"scriptSource":    map[string]any{"scriptLocation": a.script},
				"arguments":       a.args,
				"executionPolicy": string(policy),
				"onError":         string(lifecycle.Terminate),
			})
			where[s.stage] = append(where[s.stage], a.path)
			warns = append(warns, readsParallelCluster(a, opts.ScriptsFrom)...)
		}
		if len(scripts) > 0 {
			stages[s.stage] = scripts
		}
	}
	if len(stages) == 0 {
		return nil, append(warns, fmt.Sprintf("%s (queue %s): no OnNodeStart or OnNodeConfigured action: no document", capath, name))
	}
	if opts.ScriptsFrom == "" {
		warns = append(warns, capath+": the scripts were not read: give --scripts-from DIR to check them for ParallelCluster's own files "+
			"(/etc/parallelcluster/cfnconfig, cfn_* variables), which PCS nodes do not have")
	}
	api := map[string]any{"scriptCachingPolicy": string(caching), "stages": stages}
	doc, err := finish(name, api, nil, func(apiPath string) string { return pcInputPath(apiPath, capath, where) })
	if err != nil {
		if e, ok := err.(*Error); ok {
			p.list = append(p.list, e.Problems...)
			return nil, warns
		}
		p.add(capath, "%v", err)
		return nil, warns
	}
	return doc, warns
}

// pcInputPath maps a path of the converted document to the ParallelCluster path it came
// from: stages.nodeReady[2].scriptSource.scriptLocation → the action's path and Script.
// where maps an API stage name to the paths of its actions; capath is the fallback.
func pcInputPath(apiPath, capath string, where map[string][]string) string {
	rest, ok := strings.CutPrefix(apiPath, "stages.")
	if !ok {
		return capath
	}
	stage, tail, _ := strings.Cut(rest, "[")
	idx, after, _ := strings.Cut(tail, "]")
	i, err := strconv.Atoi(idx)
	if err != nil || i >= len(where[stage]) {
		return capath
	}
	ap := where[stage][i]
	switch {
	case strings.HasPrefix(after, ".scriptSource"):
		return ap + ".Script"
	case strings.HasPrefix(after, ".arguments"):
		return ap + ".Args" + strings.TrimPrefix(after, ".arguments")
	}
	return ap
}

// pcAction is one script of a custom action.
type pcAction struct {
	script string
	args   []string
	path   string
}

// pcActions reads an event's action: {Script, Args} or {Sequence: [{Script, Args}, …]}.
func pcActions(act *yaml.Node, apath string, p *problems) []pcAction {
	script, sequence := get(act, "Script"), get(act, "Sequence")
	for _, k := range keys(act) {
		if k != "Script" && k != "Args" && k != "Sequence" {
			p.add(field(apath, k), "unknown field; a custom action has Script and Args, or Sequence")
		}
	}
	switch {
	case script != nil && sequence != nil:
		p.add(apath, "has both Script and Sequence; ParallelCluster refuses this too: keep one")
		return nil
	case script != nil:
		a, ok := pcOne(act, apath, p)
		if !ok {
			return nil
		}
		return []pcAction{a}
	case sequence != nil:
		if get(act, "Args") != nil {
			p.add(field(apath, "Args"), "Args belongs to each item of Sequence")
		}
		var out []pcAction
		for i, item := range seq(sequence) {
			if a, ok := pcOne(item, index(field(apath, "Sequence"), i), p); ok {
				out = append(out, a)
			}
		}
		if len(out) == 0 && len(seq(sequence)) == 0 {
			p.add(field(apath, "Sequence"), "empty: give at least one Script")
		}
		return out
	}
	p.add(apath, "no Script and no Sequence")
	return nil
}

func pcOne(n *yaml.Node, apath string, p *problems) (pcAction, bool) {
	a := pcAction{path: apath, args: []string{}}
	s := get(n, "Script")
	if s == nil || s.Kind != yaml.ScalarNode || s.Value == "" {
		p.add(field(apath, "Script"), "required: the script's s3:// or https:// location")
		return a, false
	}
	a.script = s.Value
	if args := get(n, "Args"); args != nil {
		if args.Kind != yaml.SequenceNode {
			p.add(field(apath, "Args"), "must be a list of strings")
			return a, false
		}
		for i, el := range args.Content {
			el = resolveAlias(el)
			if el.Kind != yaml.ScalarNode {
				p.add(index(field(apath, "Args"), i), "must be a string")
				return a, false
			}
			a.args = append(a.args, el.Value)
		}
	}
	for _, k := range keys(n) {
		if k != "Script" && k != "Args" {
			p.add(field(apath, k), "unknown field; a Sequence item has Script and Args")
		}
	}
	return a, true
}

// uniqueName makes a script name from its location's file name: the characters a name allows,
// at most 64, unique in the document.
func uniqueName(loc string, used map[string]bool) string {
	base := loc
	if i := strings.IndexAny(base, "?#"); i >= 0 && strings.HasPrefix(base, "https://") {
		base = base[:i]
	}
	base = path.Base(base)
	if ext := path.Ext(base); ext != "" && ext != base {
		base = strings.TrimSuffix(base, ext)
	}
	var b strings.Builder
	for _, r := range base {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	name := strings.Trim(b.String(), "-_")
	if name == "" {
		name = "script"
	}
	if utf8.RuneCountInString(name) > 60 {
		name = name[:60]
	}
	cand := name
	for n := 2; used[cand]; n++ {
		cand = name + "-" + strconv.Itoa(n)
	}
	used[cand] = true
	return cand
}

// readsParallelCluster warns about a script (or its arguments) relying on ParallelCluster's
// own files, looking at a local copy of the script when there is one.
func readsParallelCluster(a pcAction, dir string) []string {
	var out []string
	for i, arg := range a.args {
		if pcOnly.MatchString(arg) {
			out = append(out, fmt.Sprintf("%s.Args[%d]: refers to ParallelCluster's own files or variables (%s), which PCS nodes do not have",
				a.path, i, pcOnly.FindString(arg)))
		}
	}
	if dir == "" {
		return out
	}
	found := false
	for _, f := range source.Candidates(dir, a.script) {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		found = true
		if m := pcOnly.Find(data); m != nil {
			out = append(out, fmt.Sprintf("%s.Script: %s reads ParallelCluster's own files or variables (%s), which PCS nodes do not have: "+
				"use the PCS_* variables (PCS_NODE_ID, PCS_COMPUTE_NODE_GROUP_NAME, …) instead", a.path, f, m))
		}
		break
	}
	if !found {
		out = append(out, fmt.Sprintf("%s.Script: no local copy of %s in %s: not checked for ParallelCluster's own files", a.path, a.script, dir))
	}
	return out
}

// seq is the items of a sequence node (nil for anything else).
func seq(n *yaml.Node) []*yaml.Node {
	n = resolveAlias(n)
	if n == nil || n.Kind != yaml.SequenceNode {
		return nil
	}
	out := make([]*yaml.Node, len(n.Content))
	for i, c := range n.Content {
		out[i] = resolveAlias(c)
	}
	return out
}
