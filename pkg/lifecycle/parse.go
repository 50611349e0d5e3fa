package lifecycle

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Limits of SPEC §2. Lengths count Unicode code points (runes), not bytes.
const (
	maxScripts      = 20
	maxArguments    = 20
	maxArgumentLen  = 256
	maxNameLen      = 64
	checksumHexLen  = 64
	maxEnumHintRune = 64
)

// ValidationError is an invalid configuration document: every problem found, in document
// order.
type ValidationError struct {
	Problems []Problem
}

// Error is one "path: message" line per problem.
func (e *ValidationError) Error() string {
	if len(e.Problems) == 0 {
		return "invalid configuration"
	}
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// Parse decodes, defaults and validates a configuration document in any of its forms (see
// [Decode]). On any error it returns a *ValidationError holding all problems, sorted in
// document order, and a nil document. warnings are non-fatal problems, returned whether or
// not the document is valid (see the package documentation for the list).
func Parse(data []byte, opts Options) (doc *Document, warnings []Problem, err error) {
	d, err := Decode(data, opts)
	return d.Document, d.Warnings, err
}

// Decoded is what [Decode] found.
type Decoded struct {
	// Document is the valid, defaulted document; nil when there were errors.
	Document *Document
	// Form is the shape the document was found in; "" when the input is not a JSON object.
	Form Form
	// Warnings are non-fatal problems, sorted in document order.
	Warnings []Problem
}

// Decode is [Parse] that also says which form the input had: the bare document, the document
// wrapped as {"nodeLifecycleActions": {...}} (paths then start with "nodeLifecycleActions."),
// or the output of `aws pcs get-compute-node-group`, {"computeNodeGroup": {...}} (paths then
// start with "computeNodeGroup.nodeLifecycleActions."; the group's other fields are ignored).
func Decode(data []byte, opts Options) (Decoded, error) {
	if len(data) > MaxDocumentSize {
		return Decoded{}, &ValidationError{Problems: []Problem{{Path: "$", Message: fmt.Sprintf(
			"document is %d bytes, larger than the limit of 1 MiB (%d bytes)", len(data), MaxDocumentSize)}}}
	}
	if bytes.HasPrefix(data, []byte{0xfe, 0xff}) || bytes.HasPrefix(data, []byte{0xff, 0xfe}) {
		return Decoded{}, invalidJSON("UTF-16 text: the document must be UTF-8")
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	root, detail := decodeTree(data)
	if root == nil {
		return Decoded{}, invalidJSON(detail)
	}
	w := &walker{opts: opts, names: map[string]string{}}
	d := w.document(root)
	out := Decoded{Form: w.form}
	if len(w.errs) == 0 && d != nil {
		w.lint(d)
	}
	out.Warnings = w.warns.sorted()
	if len(w.errs) > 0 {
		return out, &ValidationError{Problems: w.errs.sorted()}
	}
	out.Document = d
	return out, nil
}

func invalidJSON(detail string) *ValidationError {
	return &ValidationError{Problems: []Problem{{Path: "$", Message: "invalid JSON: " + detail}}}
}

// found is a problem with the input offset it sorts by and the order it was found in.
type found struct {
	Problem
	off int64
	seq int
}

type foundList []found

func (l foundList) sorted() []Problem {
	if len(l) == 0 {
		return nil
	}
	s := slices.Clone(l)
	slices.SortStableFunc(s, func(a, b found) int {
		if a.off != b.off {
			if a.off < b.off {
				return -1
			}
			return 1
		}
		return a.seq - b.seq
	})
	out := make([]Problem, len(s))
	for i, f := range s {
		out[i] = f.Problem
	}
	return out
}

// walker validates a decoded tree, collecting problems.
type walker struct {
	opts  Options
	errs  foundList
	warns foundList
	seq   int
	names map[string]string // script name → path of its first use
	form  Form

	// For lint, once the document is known to be valid.
	actionsPath string    // the path of the NodeLifecycleActions object ("" at the root)
	cachingOff  int64     // where scriptCachingPolicy is (or the object starts)
	scripts     []visited // every script object, in document order
}

// visited is a script object as the walk met it.
type visited struct {
	path, stage string
	index       int
	off, locOff int64
}

func (w *walker) add(list *foundList, off int64, path, msg string) {
	if path == "" {
		path = "$"
	}
	w.seq++
	*list = append(*list, found{Problem: Problem{Path: path, Message: msg}, off: off, seq: w.seq})
}

func (w *walker) errorAt(off int64, path, msg string) { w.add(&w.errs, off, path, msg) }

func (w *walker) warnAt(off int64, path, msg string) { w.add(&w.warns, off, path, msg) }

// child is the path of key inside the object at path ("" is the document root).
func child(path, key string) string {
	if isIdentifier(key) {
		if path == "" {
			return key
		}
		return path + "." + key
	}
	if path == "" {
		path = "$"
	}
	return path + "[" + strconv.Quote(key) + "]"
}

// index is the path of element i of the array at path.
func index(path string, i int) string {
	if path == "" {
		path = "$"
	}
	return path + "[" + strconv.Itoa(i) + "]"
}

func isIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '$'
		if !letter && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// fields checks the keys of object v at path against lv: a repeated key and an unknown key
// are errors. It returns the first occurrence of each known key.
func (w *walker) fields(path string, v *value, lv level) map[string]*value {
	out := map[string]*value{}
	seen := map[string]bool{}
	for _, m := range v.members {
		p := child(path, m.key)
		switch {
		case seen[m.key]:
			w.errorAt(m.off, p, "duplicate key")
		case lv.isKnown(m.key):
			out[m.key] = m.val
		default:
			w.errorAt(m.off, p, lv.unknownFieldMessage(m.key))
		}
		seen[m.key] = true
	}
	return out
}

// present reports whether a field holds a value: absent and null both mean "not given".
func present(v *value) bool { return v != nil && v.kind != kindNull }

// typeError reports that v at path is not of the wanted type.
func (w *walker) typeError(path string, v *value, want string) {
	w.errorAt(v.off, path, "must be "+want+", got "+v.kind.String())
}

// required reports a missing or null required field v of object parent. A missing field is
// reported where the object ends, after the problems of what it holds.
func (w *walker) required(parent *value, path string, v *value) {
	off := parent.end
	if v != nil {
		off = v.off
	}
	w.errorAt(off, path, "required")
}

func (w *walker) document(root *value) *Document {
	if root.kind != kindObject {
		w.typeError("", root, "an object")
		return nil
	}
	for _, m := range root.members {
		if m.key == groupKey {
			w.form = FormComputeNodeGroup
			return w.group(root)
		}
	}
	for _, m := range root.members {
		if m.key == wrapperKey {
			w.form = FormWrapped
			return w.wrapped(root)
		}
	}
	w.form = FormDocument
	return w.actions("", root)
}

// group handles the output of `aws pcs get-compute-node-group`:
// {"computeNodeGroup": {..., "nodeLifecycleActions": {...}}}. The group's other fields are
// not ours to judge and are ignored.
func (w *walker) group(root *value) *Document {
	var g *value
	for _, m := range root.members {
		p := child("", m.key)
		switch {
		case m.key == groupKey && g == nil:
			g = m.val
		case m.key == groupKey:
			w.errorAt(m.off, p, "duplicate key")
		case m.key == wrapperKey || actionsLevel.isKnown(m.key):
			w.errorAt(m.off, p, "unknown field (it belongs inside computeNodeGroup.nodeLifecycleActions)")
		default:
			w.errorAt(m.off, p, "unknown field (the output of aws pcs get-compute-node-group holds only computeNodeGroup)")
		}
	}
	switch g.kind {
	case kindObject:
	case kindNull:
		w.required(root, groupKey, g)
		return nil
	default:
		w.typeError(groupKey, g, "an object")
		return nil
	}
	path := child(groupKey, wrapperKey)
	var inner *value
	for _, m := range g.members {
		switch {
		case m.key == wrapperKey && inner == nil:
			inner = m.val
		case m.key == wrapperKey:
			w.errorAt(m.off, path, "duplicate key")
		}
	}
	switch {
	case inner == nil || inner.kind == kindNull:
		off := g.end
		if inner != nil {
			off = inner.off
		}
		w.errorAt(off, path, "required: this compute node group has no node lifecycle actions")
		return nil
	case inner.kind != kindObject:
		w.typeError(path, inner, "an object")
		return nil
	}
	return w.actions(path, inner)
}

// requestFields are the other members of the create/update-compute-node-group requests, which
// carry nodeLifecycleActions beside them (a --cli-input-json file).
var requestFields = map[string]bool{
	"clusterIdentifier": true, "computeNodeGroupName": true, "computeNodeGroupIdentifier": true, "amiId": true,
	"subnetIds": true, "purchaseOption": true, "customLaunchTemplate": true, "iamInstanceProfileArn": true,
	"scalingConfiguration": true, "instanceConfigs": true, "spotOptions": true, "slurmConfiguration": true,
	"clientToken": true, "tags": true,
}

// wrapped handles {"nodeLifecycleActions": {...}}.
func (w *walker) wrapped(root *value) *Document {
	var inner *value
	for _, m := range root.members {
		p := child("", m.key)
		switch {
		case m.key == wrapperKey && inner == nil:
			inner = m.val
		case m.key == wrapperKey:
			w.errorAt(m.off, p, "duplicate key")
		case actionsLevel.isKnown(m.key):
			w.errorAt(m.off, p, "unknown field (it belongs inside nodeLifecycleActions)")
		case requestFields[m.key]:
			w.errorAt(m.off, p, "unknown field (this looks like a --cli-input-json request: give its nodeLifecycleActions alone, "+
				`or as {"nodeLifecycleActions": {...}})`)
		default:
			w.errorAt(m.off, p, "unknown field")
		}
	}
	switch inner.kind {
	case kindNull:
		w.required(root, wrapperKey, inner)
		return nil
	case kindObject:
		return w.actions(wrapperKey, inner)
	default:
		w.typeError(wrapperKey, inner, "an object")
		return nil
	}
}

// actions handles the NodeLifecycleActions object at path.
func (w *walker) actions(path string, v *value) *Document {
	f := w.fields(path, v, actionsLevel)
	d := &Document{ScriptCachingPolicy: CacheOnce}
	w.actionsPath, w.cachingOff = path, v.off
	if p := f["scriptCachingPolicy"]; present(p) {
		w.cachingOff = p.off
		s, ok := w.enum(child(path, "scriptCachingPolicy"), p, string(CacheOnce), string(RefreshOnReboot))
		if ok {
			d.ScriptCachingPolicy = CachingPolicy(s)
		}
	}
	stagesPath := child(path, "stages")
	st := f["stages"]
	switch {
	case !present(st):
		w.required(v, stagesPath, st)
	case st.kind != kindObject:
		w.typeError(stagesPath, st, "an object")
	default:
		w.stages(stagesPath, st, d)
	}
	return d
}

func (w *walker) stages(path string, v *value, d *Document) {
	f := w.fields(path, v, stagesLevel)
	n := 0
	for _, m := range v.members { // document order, so that the first use of a name is first
		list, ok := f[m.key]
		if !ok || list != m.val || !present(list) {
			continue
		}
		n++
		scripts := w.stage(child(path, m.key), m.key, list)
		switch m.key {
		case StageNodeBootstrapped:
			d.Stages.NodeBootstrapped = scripts
		case StageNodeReady:
			d.Stages.NodeReady = scripts
		}
	}
	if n == 0 && len(f) == len(v.members) { // a misspelt stage already has its error
		w.errorAt(v.off, path, "must contain at least one stage: "+StageNodeBootstrapped+" or "+StageNodeReady)
	}
}

func (w *walker) stage(path, name string, v *value) []Script {
	if v.kind != kindArray {
		w.typeError(path, v, "an array of scripts")
		return nil
	}
	if n := len(v.elems); n < 1 || n > maxScripts {
		w.errorAt(v.off, path, fmt.Sprintf("must contain 1 to %d scripts, got %d", maxScripts, n))
	}
	scripts := make([]Script, 0, len(v.elems))
	for i, el := range v.elems {
		p := index(path, i)
		w.scripts = append(w.scripts, visited{path: p, stage: name, index: i, off: el.off, locOff: el.off})
		scripts = append(scripts, w.script(p, el))
	}
	return scripts
}

func (w *walker) script(path string, v *value) Script {
	s := Script{Arguments: []string{}, ExecutionPolicy: FirstBootOnly, OnError: Terminate}
	if v.kind != kindObject {
		w.typeError(path, v, "an object")
		return s
	}
	f := w.fields(path, v, scriptLevel)

	namePath := child(path, "name")
	if n := f["name"]; !present(n) {
		w.required(v, namePath, n)
	} else if n.kind != kindString {
		w.typeError(namePath, n, "a string")
	} else if msg := checkName(n.str); msg != "" {
		w.errorAt(n.off, namePath, msg)
	} else if first, dup := w.names[n.str]; dup {
		w.errorAt(n.off, namePath, "duplicate name "+quote(n.str)+" (first used at "+first+")")
	} else {
		w.names[n.str] = namePath
		s.Name = n.str
	}

	srcPath := child(path, "scriptSource")
	src := f["scriptSource"]
	noChecksum := false
	if !present(src) {
		w.required(v, srcPath, src)
	} else if src.kind != kindObject {
		w.typeError(srcPath, src, "an object")
	} else {
		s.ScriptSource, noChecksum = w.source(srcPath, src)
	}

	argsPath := child(path, "arguments")
	if a := f["arguments"]; present(a) {
		s.Arguments = w.arguments(argsPath, a)
	}
	if p := f["executionPolicy"]; present(p) {
		if e, ok := w.enum(child(path, "executionPolicy"), p, string(FirstBootOnly), string(EveryBoot)); ok {
			s.ExecutionPolicy = ExecutionPolicy(e)
		}
	}
	if p := f["onError"]; present(p) {
		if e, ok := w.enum(child(path, "onError"), p, string(Terminate), string(StopSequence), string(Continue)); ok {
			s.OnError = OnError(e)
		}
	}
	if noChecksum {
		w.warnAt(src.off, srcPath, noChecksumWarning(s))
	}
	return s
}

// noChecksumWarning says why a script without a checksum deserves one.
func noChecksumWarning(s Script) string {
	msg := "not verified: no checksum"
	if strings.HasPrefix(s.ScriptSource.ScriptLocation, "https://") {
		msg += " on an https:// location: nothing checks what the server sends"
	}
	if s.OnError == Terminate {
		msg += TerminateNoChecksumNote
	}
	return msg
}

// TerminateNoChecksumNote ends the no-checksum warning of a script whose onError is TERMINATE.
const TerminateNoChecksumNote = "; with onError TERMINATE, a changed or damaged object that fails replaces every node launched after it"

// checkName checks a script name: 1–64 characters matching ^[A-Za-z0-9][A-Za-z0-9 _-]*$.
func checkName(name string) string {
	switch {
	case name == "":
		return "must not be empty"
	case utf8.RuneCountInString(name) > maxNameLen:
		return tooLong(utf8.RuneCountInString(name), maxNameLen)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || c != ' ' && c != '_' && c != '-') {
			return "must start with a letter or digit and contain only letters, digits, spaces, '_' and '-'"
		}
	}
	return ""
}

// source decodes a scriptSource object; noChecksum reports that it has none (the warning
// depends on the script's onError, so the caller gives it).
func (w *walker) source(path string, v *value) (src ScriptSource, noChecksum bool) {
	f := w.fields(path, v, sourceLevel)

	locPath := child(path, "scriptLocation")
	if loc := f["scriptLocation"]; !present(loc) {
		w.required(v, locPath, loc)
	} else if loc.kind != kindString {
		w.typeError(locPath, loc, "a string")
	} else {
		w.scripts[len(w.scripts)-1].locOff = loc.off
		c := checkLocation(loc.str, w.opts.APIStrict)
		if c.problem != "" {
			w.errorAt(loc.off, locPath, c.problem)
		} else {
			src.ScriptLocation = loc.str
		}
		for _, msg := range c.warnings {
			w.warnAt(loc.off, locPath, msg)
		}
		// An s3VersionId beside a location with another scheme is an error of its own; the
		// s3VersionId is then not checked further below.
		if !c.s3 && strings.Contains(loc.str, "://") {
			if vid := f["s3VersionId"]; present(vid) && !(vid.kind == kindString && vid.str == "") {
				w.errorAt(vid.off, child(path, "s3VersionId"), "only allowed with an s3:// scriptLocation")
				delete(f, "s3VersionId")
			}
		}
	}
	sumPath := child(path, "checksum")
	if sum := f["checksum"]; !present(sum) {
		noChecksum = true
	} else if sum.kind != kindString {
		w.typeError(sumPath, sum, "a string")
	} else if msg := checkChecksum(sum.str); msg != "" {
		w.errorAt(sum.off, sumPath, msg)
	} else {
		src.Checksum = strings.ToLower(sum.str)
	}

	vidPath := child(path, "s3VersionId")
	if vid := f["s3VersionId"]; present(vid) {
		switch {
		case vid.kind != kindString:
			w.typeError(vidPath, vid, "a string")
		case utf8.RuneCountInString(vid.str) > maxS3VersionIDLen:
			w.errorAt(vid.off, vidPath, tooLong(utf8.RuneCountInString(vid.str), maxS3VersionIDLen))
		case strings.ContainsFunc(vid.str, unicode.IsControl):
			w.errorAt(vid.off, vidPath, "must not contain control characters")
		default:
			src.S3VersionID = vid.str
		}
	}
	return src, noChecksum
}

// tooLong is the message of a length limit exceeded: the limit, then the length found.
func tooLong(n, limit int) string {
	return fmt.Sprintf("longer than %d characters (it has %d)", limit, n)
}

// checkChecksum checks a SHA-256 digest: exactly 64 hexadecimal characters, either case.
func checkChecksum(sum string) string {
	const want = "must be exactly 64 hexadecimal characters (a SHA-256 digest)"
	if rest, ok := strings.CutPrefix(strings.ToLower(sum), "sha256:"); ok && len(rest) == checksumHexLen {
		return want + `, without the "sha256:" prefix`
	}
	if n := utf8.RuneCountInString(sum); n != checksumHexLen {
		return fmt.Sprintf("%s, got %d", want, n)
	}
	for i := 0; i < len(sum); i++ {
		c := sum[i] | 0x20
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return want + ", got a non-hexadecimal character"
		}
	}
	return ""
}

func (w *walker) arguments(path string, v *value) []string {
	args := []string{}
	if v.kind != kindArray {
		w.typeError(path, v, "an array of strings")
		return args
	}
	if n := len(v.elems); n > maxArguments {
		w.errorAt(v.off, path, fmt.Sprintf("must contain at most %d arguments, got %d", maxArguments, n))
	}
	for i, el := range v.elems {
		p := index(path, i)
		switch {
		case el.kind != kindString:
			w.typeError(p, el, "a string")
		case utf8.RuneCountInString(el.str) > maxArgumentLen:
			w.errorAt(el.off, p, tooLong(utf8.RuneCountInString(el.str), maxArgumentLen))
		case strings.IndexByte(el.str, 0) >= 0:
			w.errorAt(el.off, p, "must not contain a NUL character")
		default:
			args = append(args, el.str)
		}
	}
	return args
}

// enum checks that v at path is one of allowed, exactly (values are case-sensitive).
func (w *walker) enum(path string, v *value, allowed ...string) (string, bool) {
	if v.kind != kindString {
		w.typeError(path, v, "a string")
		return "", false
	}
	if slices.Contains(allowed, v.str) {
		return v.str, true
	}
	msg := "must be one of " + strings.Join(allowed, ", ") + ", got " + quote(v.str)
	if utf8.RuneCountInString(v.str) <= maxEnumHintRune {
		if a, caseOnly := suggestValue(v.str, allowed); caseOnly {
			msg += ` (did you mean "` + a + `"? values are case-sensitive)`
		} else if a != "" {
			msg += ` (did you mean "` + a + `"?)`
		}
	}
	w.errorAt(v.off, path, msg)
	return "", false
}
