package evidence

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/identity"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/paths"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/state"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/timeline"
	"github.com/pcs-lifecycle/pcs-lifecycle/pkg/lifecycle"
	"github.com/pcs-lifecycle/pcs-lifecycle/pkg/status"
)

// Redacted replaces every match of an --evidence-redact pattern.
const Redacted = "[REDACTED]"

// Input is what a bundle is made of: the node, its state, configuration and status.
type Input struct {
	Layout  paths.Layout
	Node    identity.Node
	State   *state.State
	Doc     *lifecycle.Document // nil when none is cached
	Status  *status.Document    // what status --json prints
	Version string
	Commit  string
	Trigger string // OnTerminate, OnFailure, OnAlways
	Stage   string // the stage whose end triggered it
	Now     time.Time
}

// Bundle is a bundle ready to upload.
type Bundle struct {
	Key        string // the tarball's key
	SummaryKey string
	Tarball    []byte
	Summary    *Summary
	// SummaryJSON is the summary on one line, newline-terminated.
	SummaryJSON []byte
	Manifest    *Manifest
}

// Manifest is manifest.json in the tarball.
type Manifest struct {
	SchemaVersion int                `json:"schema_version"`
	CreatedAt     time.Time          `json:"created_at"`
	Trigger       string             `json:"trigger"`
	Stage         string             `json:"stage"`
	Identity      ManifestIdentity   `json:"identity"`
	Versions      ManifestVersions   `json:"versions"`
	ExitCode      int                `json:"exit_code"`
	Stages        []StageSummary     `json:"stages"`
	Timeline      *timeline.Timeline `json:"timeline,omitempty"`
	Files         []FileEntry        `json:"files"`
	// Skipped names the logs that could not be packed, and why.
	Skipped []string `json:"skipped,omitempty"`
	// RedactPatterns is how many --evidence-redact patterns were applied; Redactions how many
	// matches they replaced.
	RedactPatterns int `json:"redact_patterns"`
	Redactions     int `json:"redactions"`
}

// ManifestIdentity is the node.
type ManifestIdentity struct {
	ClusterID            string `json:"cluster_id"`
	ClusterName          string `json:"cluster_name,omitempty"`
	ComputeNodeGroupID   string `json:"compute_node_group_id"`
	ComputeNodeGroupName string `json:"compute_node_group_name,omitempty"`
	InstanceID           string `json:"instance_id"`
	NodeID               string `json:"node_id,omitempty"`
	BootID               string `json:"boot_id"`
	FirstBootID          string `json:"first_boot_id,omitempty"`
	FirstBoot            bool   `json:"first_boot"`
	Region               string `json:"region,omitempty"`
}

// ManifestVersions are the executor's and the configuration's.
type ManifestVersions struct {
	PCSLifecycle string `json:"pcs_lifecycle"`
	Commit       string `json:"commit,omitempty"`
	Go           string `json:"go"`
	ConfigSHA256 string `json:"config_sha256,omitempty"`
}

// FileEntry is one file of the tarball.
type FileEntry struct {
	Name  string `json:"name"`
	Bytes int    `json:"bytes"`
	// Source is the file on the node it was taken from; SourceBytes its size then, and
	// Truncated whether only its end was kept.
	Source      string `json:"source,omitempty"`
	SourceBytes int64  `json:"source_bytes,omitempty"`
	Truncated   bool   `json:"truncated,omitempty"`
}

// redactor masks the --evidence-redact patterns and counts the matches.
type redactor struct {
	res []*regexp.Regexp
	n   int
}

func (r *redactor) str(s string) string {
	for _, re := range r.res {
		s = re.ReplaceAllStringFunc(s, func(string) string { r.n++; return Redacted })
	}
	return s
}

// lines redacts text line by line (a pattern never spans lines).
func (r *redactor) lines(data []byte) []byte {
	if len(r.res) == 0 {
		return data
	}
	var b bytes.Buffer
	b.Grow(len(data))
	for len(data) > 0 {
		line := data
		rest := []byte(nil)
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, rest = data[:i+1], data[i+1:]
		}
		b.WriteString(r.str(string(line)))
		data = rest
	}
	return b.Bytes()
}

// jsonValue redacts every string of v (keys included) and returns it indented.
func (r *redactor) jsonValue(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var tree any
	if err := json.Unmarshal(raw, &tree); err != nil {
		return nil, err
	}
	out, err := json.MarshalIndent(r.walk(tree), "", "  ")
	return append(out, '\n'), err
}

func (r *redactor) walk(v any) any {
	switch t := v.(type) {
	case string:
		return r.str(t)
	case []any:
		for i := range t {
			t[i] = r.walk(t[i])
		}
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, x := range t {
			m[r.str(k)] = r.walk(x)
		}
		return m
	}
	return v
}

// KeyPart makes an identity value safe as one S3 key component: "unknown" when empty, and
// anything but letters, digits, '.', '_' and '-' replaced by '_'.
func KeyPart(s string) string {
	if s == "" {
		return "unknown"
	}
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	if s := string(b); s != "." && s != ".." {
		return s
	}
	return "unknown"
}

// Keys returns the tarball's and the summary's keys under loc for the node's boot.
func Keys(loc Location, n identity.Node) (string, string) {
	base := loc.Prefix + KeyPart(n.ClusterID) + "/" + KeyPart(n.ComputeNodeGroupID) + "/" + KeyPart(n.InstanceID) + "/" + KeyPart(n.BootID)
	return base + ".tar.gz", base + ".json"
}

// tail reads at most max bytes of the end of path; cut reports whether earlier bytes were left
// out (the first, partial line is dropped then). size is the file's size.
//
// A symlink or a hard link planted at path is refused: a script (root) could otherwise point
// its log at a file that was never meant to leave the node.
func tail(path string, max int64) (data []byte, size int64, cut bool, err error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, 0, false, fmt.Errorf("%s: is a symlink; not packing it", path)
		}
		return nil, 0, false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, false, err
	}
	if !fi.Mode().IsRegular() {
		return nil, 0, false, fmt.Errorf("%s: not a regular file", path)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
		return nil, 0, false, fmt.Errorf("%s: has %d hard links; not packing it", path, st.Nlink)
	}
	size = fi.Size()
	off := int64(0)
	if size > max {
		off, cut = size-max, true
	}
	data, err = io.ReadAll(io.NewSectionReader(f, off, size-off))
	if err != nil {
		return nil, size, cut, err
	}
	if cut {
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			data = data[i+1:]
		}
	}
	return data, size, cut, nil
}

// bootStart is the earliest time recorded for the boot: executor.log lines from then on are
// this boot's.
func bootStart(b *state.Boot) time.Time {
	t := b.StartedAt
	for _, m := range b.Marks {
		if m.At.Before(t) {
			t = m.At
		}
	}
	for _, sr := range b.Stages {
		if sr.StartedAt.Before(t) {
			t = sr.StartedAt
		}
	}
	return t
}

var tsKey = []byte(`"timestamp":"`)

// lineTime is the timestamp of an executor.log line (zero when it has none).
func lineTime(line []byte) time.Time {
	i := bytes.Index(line, tsKey)
	if i < 0 {
		return time.Time{}
	}
	rest := line[i+len(tsKey):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return time.Time{}
	}
	t, _ := time.Parse(time.RFC3339Nano, string(rest[:j]))
	return t
}

// bootLines returns executor.log's lines written since start (from the last window of the
// file), at most max bytes of them, the last kept.
func bootLines(path string, start time.Time, max int) ([]byte, int64, bool, error) {
	data, size, _, err := tail(path, executorLogWindow)
	if err != nil {
		return nil, 0, false, err
	}
	// The lines are in time order: find the first of this boot.
	from := len(data)
	for off := 0; off < len(data); {
		end := bytes.IndexByte(data[off:], '\n')
		if end < 0 {
			end = len(data) - off
		} else {
			end++
		}
		if t := lineTime(data[off : off+end]); !t.IsZero() && !t.Before(start) {
			from = off
			break
		}
		off += end
	}
	data = data[from:]
	cut := false
	if len(data) > max {
		data, cut = data[len(data)-max:], true
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			data = data[i+1:]
		}
	}
	return data, size, cut, nil
}

// lastLine is the last line a script printed in its log: not a frame line, not empty.
func lastLine(log []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(log))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	last := ""
	for sc.Scan() {
		l := strings.TrimRight(sc.Text(), "\r")
		switch {
		case strings.TrimSpace(l) == "":
		case strings.HasPrefix(l, "[start "), strings.HasPrefix(l, "[end "), strings.HasPrefix(l, "[output truncated after "):
		default:
			last = l
		}
	}
	if len(last) > 512 {
		last = last[:512]
	}
	return last
}

type tarFile struct {
	name string
	data []byte
}

// Make builds the bundle of in's boot, with o's redaction, for the location loc.
func Make(in Input, o Options, loc Location) (*Bundle, error) {
	if in.State == nil || in.Status == nil {
		return nil, errors.New("nothing recorded on this instance")
	}
	b := in.State.Boot(in.Node.BootID)
	if b == nil {
		return nil, fmt.Errorf("boot %s is not recorded", in.Node.BootID)
	}
	now := in.Now.UTC()
	r := &redactor{res: o.Redact}
	dir := KeyPart(in.Node.BootID) + "/"
	var files []tarFile
	man := &Manifest{SchemaVersion: SchemaVersion, CreatedAt: now, Trigger: in.Trigger, Stage: in.Stage, ExitCode: in.Status.ExitCode,
		Identity: ManifestIdentity{ClusterID: in.Node.ClusterID, ClusterName: in.Node.ClusterName, ComputeNodeGroupID: in.Node.ComputeNodeGroupID,
			ComputeNodeGroupName: in.Node.ComputeNodeGroupName, InstanceID: in.Node.InstanceID, NodeID: in.Node.NodeID, BootID: in.Node.BootID,
			FirstBootID: in.State.FirstBootID, FirstBoot: in.State.FirstBootID == in.Node.BootID, Region: in.Node.Region},
		Versions:       ManifestVersions{PCSLifecycle: in.Version, Commit: in.Commit, Go: runtime.Version(), ConfigSHA256: in.State.ConfigSHA},
		Timeline:       timeline.Build(in.State, in.Node.BootID),
		RedactPatterns: len(o.Redact), Files: []FileEntry{}}
	add := func(name string, data []byte, e FileEntry) {
		e.Name, e.Bytes = dir+name, len(data)
		man.Files = append(man.Files, e)
		files = append(files, tarFile{dir + name, data})
	}

	if data, size, cut, err := bootLines(in.Layout.ExecutorLog(), bootStart(b), MaxExecutorLog); err == nil {
		add("executor.log", r.lines(data), FileEntry{Source: in.Layout.ExecutorLog(), SourceBytes: size, Truncated: cut})
	} else if !errors.Is(err, os.ErrNotExist) {
		man.Skipped = append(man.Skipped, r.str(err.Error()))
	}
	lastLines := map[string]string{}
	for _, sg := range in.Status.Stages {
		for _, sc := range sg.Scripts {
			p := in.Layout.ScriptLog(sg.Name, sc.Name)
			data, size, cut, err := tail(p, MaxScriptLog)
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			if err != nil {
				// Not packed (a planted link, unreadable): the rest of the evidence still goes.
				man.Skipped = append(man.Skipped, r.str(err.Error()))
				continue
			}
			data = r.lines(data)
			lastLines[state.Key(sg.Name, sc.Name)] = lastLine(data)
			add("scripts/"+sg.Name+"/"+sc.Name+".log", data, FileEntry{Source: p, SourceBytes: size, Truncated: cut})
		}
	}
	statusJSON, err := r.jsonValue(in.Status)
	if err != nil {
		return nil, fmt.Errorf("status: %w", err)
	}
	add("status.json", statusJSON, FileEntry{})

	key, skey := Keys(loc, in.Node)
	sum := summarize(in, r, key, man.Identity.FirstBoot, now, lastLines)
	man.Stages = sum.Stages
	// The manifest last: it lists the other files and counts the redactions in them.
	man.Redactions = r.n
	manJSON, err := r.jsonValue(man)
	if err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	files = append(files, tarFile{dir + "manifest.json", manJSON})

	tgz, err := pack(files, now)
	if err != nil {
		return nil, err
	}
	sj, err := json.Marshal(sum)
	if err != nil {
		return nil, err
	}
	return &Bundle{Key: key, SummaryKey: skey, Tarball: tgz, Summary: sum, SummaryJSON: append(sj, '\n'), Manifest: man}, nil
}

// summarize is the bundle's summary: the boot's stages and scripts as status saw them, each
// script with the last line of its log (redacted).
func summarize(in Input, r *redactor, key string, firstBoot bool, now time.Time, lastLines map[string]string) *Summary {
	sum := &Summary{SchemaVersion: SchemaVersion, ClusterID: in.Node.ClusterID, ComputeNodeGroupID: in.Node.ComputeNodeGroupID,
		InstanceID: in.Node.InstanceID, BootID: in.Node.BootID, NodeID: in.Node.NodeID, FirstBoot: firstBoot,
		UploadedAt: now, Trigger: in.Trigger, Stage: in.Stage, ExitCode: in.Status.ExitCode, InstanceFailed: in.Status.Terminated != nil,
		Version: in.Version, BundleKey: key, Stages: []StageSummary{}, Scripts: []ScriptSum{}}
	for _, sg := range in.Status.Stages {
		ss := StageSummary{Name: sg.Name, Status: sg.Status, ExitCode: sg.ExitCode, StartedAt: sg.StartedAt, DurationMS: sg.DurationMS}
		sum.Stages = append(sum.Stages, ss)
		for _, sc := range sg.Scripts {
			st := sc.State
			if st == "" {
				st = sc.ThisBoot
			}
			x := ScriptSum{Stage: sg.Name, Name: sc.Name, State: st, OnError: sc.OnError, ExecutionPolicy: sc.ExecutionPolicy,
				ExitCode: sc.ExitCode, Signal: sc.Signal, StartedAt: sc.StartedAt, DurationMS: sc.DurationMS, Runs: sc.Runs,
				Error: r.str(sc.Error), LastLogLine: lastLines[state.Key(sg.Name, sc.Name)]}
			if h := in.State.Scripts[state.Key(sg.Name, sc.Name)]; h != nil {
				x.Failures = h.Failures
			}
			sum.Scripts = append(sum.Scripts, x)
		}
	}
	return sum
}

func pack(files []tarFile, now time.Time) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o640, Size: int64(len(f.data)), ModTime: now, Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
			return nil, fmt.Errorf("bundle: %w", err)
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, fmt.Errorf("bundle: %w", err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("bundle: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("bundle: %w", err)
	}
	return buf.Bytes(), nil
}
