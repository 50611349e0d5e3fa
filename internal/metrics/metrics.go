// Package metrics renders a node's lifecycle state as Prometheus metrics in the text format
// node_exporter's textfile collector reads: per script the last exit code and duration, runs
// and failures; per stage the result, duration and the registration wait; the first boot, an
// instance marked failed, the evidence upload. `--metrics-textfile` writes them atomically
// after each stage and `status --format prometheus` prints the same text.
//
// The families are built as client_model protobufs and encoded by
// github.com/prometheus/common/expfmt: the library writes the text (HELP, TYPE, escaping,
// float formatting); this package only decides names, labels and values. client_golang's
// registry is not used at run time (its init registers the Go and process collectors, a cost
// every command would pay); tests lint the output with its promlint.
package metrics

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/protobuf/proto"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/fsutil"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/state"
	"github.com/pcs-lifecycle/pcs-lifecycle/pkg/status"
)

// Prefix of every metric name.
const Prefix = "pcs_lifecycle_"

// FileMode of the textfile: node_exporter runs as its own user and must read it.
const FileMode os.FileMode = 0o644

// Input is what the metrics are made of: the status document of the current boot (the
// vocabulary of status and status --json) and the state it was built from (counters, marks).
type Input struct {
	Status *status.Document
	State  *state.State // nil: nothing has run on this instance
}

type builder struct {
	fams map[string]*dto.MetricFamily
}

func (b *builder) add(name, help string, typ dto.MetricType, value float64, labels ...string) {
	name = Prefix + name
	f := b.fams[name]
	if f == nil {
		f = &dto.MetricFamily{Name: proto.String(name), Help: proto.String(help), Type: typ.Enum()}
		b.fams[name] = f
	}
	m := &dto.Metric{}
	for i := 0; i+1 < len(labels); i += 2 {
		m.Label = append(m.Label, &dto.LabelPair{Name: proto.String(labels[i]), Value: proto.String(labels[i+1])})
	}
	switch typ {
	case dto.MetricType_COUNTER:
		m.Counter = &dto.Counter{Value: proto.Float64(value)}
	default:
		m.Gauge = &dto.Gauge{Value: proto.Float64(value)}
	}
	f.Metric = append(f.Metric, m)
}

func (b *builder) gauge(name, help string, v float64, labels ...string) {
	b.add(name, help, dto.MetricType_GAUGE, v, labels...)
}

func (b *builder) counter(name, help string, v float64, labels ...string) {
	b.add(name, help, dto.MetricType_COUNTER, v, labels...)
}

func unix(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

func boolf(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Families returns the metric families of the node, sorted by name.
func Families(in Input) []*dto.MetricFamily {
	b := &builder{fams: map[string]*dto.MetricFamily{}}
	d := in.Status
	st := in.State
	if st != nil && d != nil && st.InstanceID != d.Node.InstanceID {
		st = nil // another instance's history
	}
	var boot *state.Boot
	if st != nil && d != nil {
		boot = st.Boot(d.Node.BootID)
	}
	if d != nil {
		b.gauge("boot_info", "The instance and boot these metrics describe (value always 1).", 1,
			"instance_id", d.Node.InstanceID, "boot_id", d.Node.BootID)
		b.gauge("exit_code", "Exit code of status for the current boot (0 ok, 1 not registered, 3 a script failed, 4 TERMINATE, 5 nothing ran).",
			float64(d.ExitCode))
		b.gauge("first_boot", "1 when the current boot is the instance's first boot, else 0.", boolf(d.Node.FirstBoot))
		b.gauge("instance_failed", "1 when a TERMINATE marked the instance failed: nothing more runs on it, else 0.", boolf(d.Terminated != nil))
		if t := d.Terminated; t != nil {
			b.gauge("instance_failed_timestamp_seconds", "When the TERMINATE marked the instance failed, in Unix seconds.", unix(t.At),
				"stage", t.Stage, "script", t.Script)
		}
		for _, s := range d.Stages {
			stageMetrics(b, s, boot)
		}
	}
	if boot != nil {
		if e := boot.Evidence; e != nil {
			b.gauge("evidence_upload_success", "1 when the last evidence bundle upload of this boot succeeded, 0 when it failed.", boolf(e.OK))
			b.gauge("evidence_upload_timestamp_seconds", "When the last evidence bundle upload of this boot ended, in Unix seconds.",
				unix(e.At.Add(time.Duration(e.DurationMS)*time.Millisecond)))
			b.gauge("evidence_upload_duration_seconds", "How long the last evidence bundle upload of this boot took.", float64(e.DurationMS)/1e3)
		}
	}
	if st != nil && d != nil {
		for _, s := range d.Stages {
			for _, sc := range s.Scripts {
				h := st.Scripts[state.Key(s.Name, sc.Name)]
				runs, fails := 0, 0
				if h != nil {
					runs, fails = h.Runs, h.Failures
				}
				b.counter("script_runs_total", "Executions of the script started on this instance.", float64(runs), "stage", s.Name, "script", sc.Name)
				b.counter("script_failures_total", "Failed runs of the script on this instance (non-zero exit, signal, timeout, or download failure).",
					float64(fails), "stage", s.Name, "script", sc.Name)
			}
		}
	}
	out := make([]*dto.MetricFamily, 0, len(b.fams))
	for _, f := range b.fams {
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GetName() < out[j].GetName() })
	return out
}

func stageMetrics(b *builder, s status.Stage, boot *state.Boot) {
	b.gauge("stage_status", "The stage's status on the current boot (value 1; the status is the label).", 1, "stage", s.Name, "status", s.Status)
	if s.ExitCode != nil {
		b.gauge("stage_exit_code", "Exit code of the stage's last run on the current boot (0, 3, 4; 1 not registered).", float64(*s.ExitCode), "stage", s.Name)
	}
	if s.StartedAt != nil {
		b.gauge("stage_start_timestamp_seconds", "When the stage's run on the current boot started, in Unix seconds.", unix(*s.StartedAt), "stage", s.Name)
	}
	if s.DurationMS != nil {
		b.gauge("stage_duration_seconds", "How long the stage's run on the current boot took.", float64(*s.DurationMS)/1e3, "stage", s.Name)
	}
	if boot != nil {
		if m := boot.LastMark(state.MarkRegistrationWait, s.Name); m != nil {
			b.gauge("stage_registration_wait_seconds", "How long the stage waited for the node's Slurm registration before it ran.",
				float64(m.DurationMS)/1e3, "stage", s.Name)
		}
	}
	for _, sc := range s.Scripts {
		l := []string{"stage", s.Name, "script", sc.Name}
		b.gauge("script_state", "The script's state on the current boot (value 1; the state is the label).", 1,
			"stage", s.Name, "script", sc.Name, "state", scriptState(sc))
		if sc.ExitCode != nil {
			b.gauge("script_last_exit_code", "Exit code of the script's last execution on this instance (-1: killed by a signal).", float64(*sc.ExitCode), l...)
		}
		if sc.DurationMS != nil {
			b.gauge("script_last_duration_seconds", "How long the script's last execution on this instance took.", float64(*sc.DurationMS)/1e3, l...)
		}
		if sc.StartedAt != nil {
			b.gauge("script_last_run_timestamp_seconds", "When the script's last execution on this instance started, in Unix seconds.", unix(*sc.StartedAt), l...)
		}
	}
}

// scriptState is the script's state on this boot in status's vocabulary (status.ScriptStates).
func scriptState(sc status.Script) string {
	if sc.State != "" {
		return sc.State
	}
	return sc.ThisBoot
}

// Write encodes the families in the Prometheus text format.
func Write(w io.Writer, fams []*dto.MetricFamily) error {
	for _, f := range fams {
		if _, err := expfmt.MetricFamilyToText(w, f); err != nil {
			return fmt.Errorf("metrics: %w", err)
		}
	}
	return nil
}

// WriteFile replaces path with the metrics, atomically (temp file, fsync, rename, fsync of the
// directory): node_exporter never reads a partial file. The temp file's name does not end in
// .prom, so the collector never reads it either.
func WriteFile(path string, fams []*dto.MetricFamily) error {
	var buf bytes.Buffer
	if err := Write(&buf, fams); err != nil {
		return err
	}
	return fsutil.WriteAtomic(path, buf.Bytes(), FileMode)
}
