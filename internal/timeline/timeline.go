// Package timeline is a boot's timeline as the state recorded it (status --timeline): when each
// executor started, the downloads, each stage and script, READY=1, the Slurm registration wait,
// the evidence upload, with durations; or, sorted by duration, the slowest first, the way
// `systemd-analyze blame` shows a boot.
package timeline

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/state"
	"github.com/pcs-lifecycle/pcs-lifecycle/pkg/lifecycle"
)

// Version of the JSON document.
const Version = 1

// Entry kinds.
const (
	KindExecutor     = "executor"
	KindDownloads    = "downloads"
	KindStage        = "stage"
	KindScript       = "script"
	KindReady        = "ready"
	KindRegistration = "registration_wait"
	KindEvidence     = "evidence_upload"
)

// Entry is one step of the boot. A step without a duration (an executor start, READY=1) has
// DurationMS nil.
type Entry struct {
	Kind       string    `json:"kind"`
	Name       string    `json:"name"`
	Stage      string    `json:"stage,omitempty"`
	Script     string    `json:"script,omitempty"`
	Start      time.Time `json:"start"`
	OffsetMS   int64     `json:"offset_ms"` // from the timeline's start
	DurationMS *int64    `json:"duration_ms,omitempty"`
	Result     string    `json:"result,omitempty"`
	Detail     string    `json:"detail,omitempty"`
}

// Timeline is one boot's steps, in the order they started.
type Timeline struct {
	Version    int       `json:"version"`
	InstanceID string    `json:"instance_id"`
	BootID     string    `json:"boot_id"`
	FirstBoot  bool      `json:"first_boot"`
	Start      time.Time `json:"start"`
	End        time.Time `json:"end"`
	// TotalMS runs from the first step's start to the last step's end.
	TotalMS int64 `json:"total_ms"`
	// ReadyEndMS is when nodeReady ended, from the start: the boot's work is done then.
	ReadyEndMS *int64  `json:"node_ready_end_ms,omitempty"`
	Entries    []Entry `json:"entries"`
}

func ms(d int64) *int64 { return &d }

// Build returns the timeline of bootID from st (nil when st holds no such boot).
func Build(st *state.State, bootID string) *Timeline {
	if st == nil {
		return nil
	}
	b := st.Boot(bootID)
	if b == nil {
		return nil
	}
	tl := &Timeline{Version: Version, InstanceID: st.InstanceID, BootID: bootID, FirstBoot: bootID == st.FirstBootID, Entries: []Entry{}}
	add := func(e Entry) { tl.Entries = append(tl.Entries, e) }
	for _, m := range b.Marks {
		add(markEntry(m))
	}
	for _, name := range lifecycle.Stages {
		sr := b.Stages[name]
		if sr == nil {
			continue
		}
		e := Entry{Kind: KindStage, Name: name, Stage: name, Start: sr.StartedAt, Result: string(sr.Status)}
		if sr.EndedAt != nil {
			e.DurationMS = ms(sr.EndedAt.Sub(sr.StartedAt).Milliseconds())
			if sr.Status != state.StageRunning {
				e.Result += fmt.Sprintf(" (exit %d)", sr.ExitCode)
			}
		}
		add(e)
		for _, r := range sr.Scripts {
			if r.StartedAt == nil {
				continue // never started on this boot (skipped, not run, download failed)
			}
			se := Entry{Kind: KindScript, Name: name + "/" + r.Name, Stage: name, Script: r.Name, Start: *r.StartedAt, Result: result(r)}
			if r.Status != state.ScriptRunning {
				se.DurationMS = ms(r.DurationMS)
			}
			add(se)
		}
	}
	if len(tl.Entries) == 0 {
		tl.Start, tl.End = b.StartedAt, b.StartedAt
		return tl
	}
	order(tl)
	if sr := b.Stages[lifecycle.StageNodeReady]; sr != nil && sr.EndedAt != nil && !sr.Status.Resumable() {
		tl.ReadyEndMS = ms(sr.EndedAt.Sub(tl.Start).Milliseconds())
	}
	return tl
}

// markEntry is a timed step of the boot besides stages and scripts.
func markEntry(m state.Mark) Entry {
	e := Entry{Kind: m.Kind, Stage: m.Stage, Start: m.At, Detail: m.Detail}
	switch m.Kind {
	case state.MarkExecutorStarted:
		e.Kind, e.Name = KindExecutor, "executor started"
	case state.MarkDownloads:
		e.Kind, e.Name, e.DurationMS = KindDownloads, "downloads", ms(m.DurationMS)
	case state.MarkReady:
		e.Kind, e.Name = KindReady, "READY=1"
	case state.MarkRegistrationWait:
		e.Kind, e.Name, e.DurationMS, e.Result, e.Detail = KindRegistration, "registration wait", ms(m.DurationMS), m.Detail, ""
	case state.MarkEvidence:
		e.Kind, e.Name, e.DurationMS, e.Result, e.Detail = KindEvidence, "evidence upload", ms(m.DurationMS), m.Detail, ""
	default:
		e.Name = m.Kind
	}
	return e
}

// order sorts the entries and sets the offsets, the start, the end and the total.
func order(tl *Timeline) {
	// Chronological; at the same instant a stage before its scripts, marks first.
	rank := map[string]int{KindExecutor: 0, KindDownloads: 1, KindReady: 1, KindRegistration: 1, KindStage: 2, KindScript: 3, KindEvidence: 4}
	sort.SliceStable(tl.Entries, func(i, j int) bool {
		a, c := tl.Entries[i], tl.Entries[j]
		if !a.Start.Equal(c.Start) {
			return a.Start.Before(c.Start)
		}
		return rank[a.Kind] < rank[c.Kind]
	})
	tl.Start = tl.Entries[0].Start
	tl.End = tl.Start
	for i := range tl.Entries {
		e := &tl.Entries[i]
		e.Start = e.Start.UTC()
		e.OffsetMS = e.Start.Sub(tl.Start).Milliseconds()
		end := e.Start
		if e.DurationMS != nil {
			end = end.Add(time.Duration(*e.DurationMS) * time.Millisecond)
		}
		if end.After(tl.End) {
			tl.End = end
		}
	}
	tl.Start, tl.End = tl.Start.UTC(), tl.End.UTC()
	tl.TotalMS = tl.End.Sub(tl.Start).Milliseconds()
}

func result(r *state.ScriptRun) string {
	s := string(r.Status)
	switch {
	case r.Signal != "":
		s += " signal:" + r.Signal
	case r.ExitCode != nil:
		s += fmt.Sprintf(" exit=%d", *r.ExitCode)
	}
	return s
}

// ByDuration returns the entries that have a duration, the slowest first.
func (tl *Timeline) ByDuration() []Entry {
	var out []Entry
	for _, e := range tl.Entries {
		if e.DurationMS != nil {
			out = append(out, e)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return *out[i].DurationMS > *out[j].DurationMS })
	return out
}

// Seconds formats milliseconds as systemd-analyze does: "1.234s", "2min 3.456s".
func Seconds(ms int64) string {
	d := time.Duration(ms) * time.Millisecond
	if d >= time.Minute {
		m := d / time.Minute
		return fmt.Sprintf("%dmin %.3fs", m, (d - m*time.Minute).Seconds())
	}
	return fmt.Sprintf("%.3fs", d.Seconds())
}

// WriteText prints the timeline: chronological with each step's offset from the start, or
// (byDuration) the steps with a duration, the slowest first.
func WriteText(w io.Writer, tl *Timeline, byDuration bool) error {
	kind := "reboot"
	if tl.FirstBoot {
		kind = "first boot"
	}
	fmt.Fprintf(w, "instance %s  boot %s (%s)  started %s  total %s\n", tl.InstanceID, tl.BootID, kind,
		tl.Start.Format(time.RFC3339), Seconds(tl.TotalMS))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	if byDuration {
		for _, e := range tl.ByDuration() {
			fmt.Fprintf(tw, "%s\t %s\n", Seconds(*e.DurationMS), describe(e, false))
		}
		return tw.Flush()
	}
	for _, e := range tl.Entries {
		dur := "-"
		if e.DurationMS != nil {
			dur = Seconds(*e.DurationMS)
		} else if e.Kind == KindStage || e.Kind == KindScript {
			dur = "running"
		}
		fmt.Fprintf(tw, "+%s\t%s\t %s\n", Seconds(e.OffsetMS), dur, describe(e, true))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if tl.ReadyEndMS != nil {
		fmt.Fprintf(w, "nodeReady ended at +%s\n", Seconds(*tl.ReadyEndMS))
	}
	return nil
}

// describe is an entry's text; nested indents a stage's scripts under it.
func describe(e Entry, nested bool) string {
	var b strings.Builder
	if nested && e.Kind == KindScript {
		b.WriteString("  ")
	}
	b.WriteString(e.Name)
	if e.Result != "" {
		b.WriteString(": " + e.Result)
	}
	if e.Detail != "" {
		b.WriteString(" (" + e.Detail + ")")
	}
	return b.String()
}

// WriteJSON prints the timeline as JSON; byDuration orders the entries slowest first and
// leaves out those without a duration.
func WriteJSON(w io.Writer, tl *Timeline, byDuration bool) error {
	if byDuration {
		c := *tl
		c.Entries = tl.ByDuration()
		if c.Entries == nil {
			c.Entries = []Entry{}
		}
		tl = &c
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(tl)
}
