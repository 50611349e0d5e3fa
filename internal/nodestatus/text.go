package nodestatus

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/pcs-lifecycle/pcs-lifecycle/pkg/status"
)

// TextOptions shape the status text.
type TextOptions struct {
	Width int       // 0: DefaultWidth
	Wide  bool      // one line per script, reasons at the end of it
	Now   time.Time // zero: time.Now(); its location is the time zone shown
}

func (o TextOptions) norm() TextOptions {
	if o.Width <= 0 {
		o.Width = DefaultWidth
	}
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	return o
}

// Pack joins items with two spaces into lines of at most width characters.
func Pack(items []string, n int, indent string) []string {
	var out []string
	line := ""
	for _, it := range items {
		switch {
		case it == "":
		case line == "":
			line = it
		case n > 0 && width(line)+2+width(it) > n:
			out = append(out, line)
			line = indent + it
		default:
			line += "  " + it
		}
	}
	return append(out, line)
}

// WriteStatus prints the status document for a terminal: a heading for the node, one line per
// stage and one row per script (state, policy, onError, last run, runs), the reasons under
// it, then "exit N: <summary>".
func WriteStatus(w io.Writer, d *status.Document, o TextOptions) error {
	o = o.norm()
	loc := o.Now.Location()
	var b strings.Builder
	kind := "reboot"
	if d.Node.FirstBoot {
		kind = "first boot"
	} else if d.Node.FirstBootID != "" {
		kind = "reboot; first boot " + d.Node.FirstBootID
	}
	head := []string{}
	if d.Node.NodeID != "" {
		head = append(head, "node "+d.Node.NodeID)
	}
	if d.Node.InstanceID != "" {
		head = append(head, "instance "+d.Node.InstanceID)
	}
	head = append(head, "boot "+d.Node.BootID+" ("+kind+")")
	if d.Node.Caching != "" {
		head = append(head, d.Node.Caching)
	}
	width := o.Width
	if o.Wide {
		width = 0
	}
	for _, l := range Pack(head, width, "") {
		b.WriteString(l + "\n")
	}
	if d.Running {
		b.WriteString("running now: " + d.Holder + "\n")
	}
	if d.Terminated != nil {
		for _, l := range wrapIndent("TERMINATED: "+d.Terminated.Message+": nothing more runs on it", width) {
			b.WriteString(l + "\n")
		}
	}
	if e := d.Evidence; e != nil {
		line := "evidence: uploaded after " + e.Stage + " to " + e.URI
		if !e.OK {
			line = "evidence: upload after " + e.Stage + " FAILED: " + e.Error
		}
		for _, l := range wrapIndent(line, width) {
			b.WriteString(l + "\n")
		}
	}
	t := &Table{Width: o.Width, Wide: o.Wide, Indent: "  "}
	if len(d.Stages) > 0 {
		why := ""
		if o.Wide {
			why = "WHY"
		}
		t.Row("SCRIPT", "STATE", "POLICY", "ON ERROR", "LAST RUN", "RUNS", why)
	}
	for _, s := range d.Stages {
		t.Line(stageLine(s, loc))
		for _, sc := range s.Scripts {
			t.Row(sc.Name, sc.State, sc.ExecutionPolicy, sc.OnError, lastRun(sc, o.Now), fmt.Sprint(sc.Runs), note(sc))
		}
	}
	if err := t.Write(&b); err != nil {
		return err
	}
	sum := d.Summary
	if d.Terminated != nil {
		sum = "the instance must be replaced (TERMINATED above)"
	}
	for _, l := range wrapIndent(fmt.Sprintf("exit %d: %s", d.ExitCode, sum), width) {
		b.WriteString(l + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// wrapIndent wraps text to width (0: no wrap), continuation lines indented by two spaces.
func wrapIndent(text string, width int) []string {
	if width <= 0 || len([]rune(text)) <= width {
		return []string{text}
	}
	lines := Wrap(text, width)
	rest := strings.Join(lines[1:], " ")
	out := []string{lines[0]}
	for _, l := range Wrap(rest, width-2) {
		out = append(out, "  "+l)
	}
	return out
}

func stageLine(s status.Stage, loc *time.Location) string {
	parts := []string{s.Status}
	if s.ExitCode != nil {
		parts = append(parts, fmt.Sprintf("exit %d", *s.ExitCode))
	}
	if s.StartedAt != nil {
		parts = append(parts, "started "+Full(*s.StartedAt, loc))
	}
	if s.DurationMS != nil {
		parts = append(parts, "took "+Duration(time.Duration(*s.DurationMS)*time.Millisecond))
	}
	return s.Name + ": " + strings.Join(parts, ", ")
}

// lastRun is the LAST RUN cell: the last execution on this instance.
func lastRun(sc status.Script, now time.Time) string {
	if sc.LastResult == "" {
		return "never"
	}
	var parts []string
	switch {
	case sc.LastResult == status.ScriptDownloadFailed:
		parts = append(parts, "download failed")
	case sc.LastResult == status.ScriptRunning:
		parts = append(parts, "running")
	case sc.Signal != "":
		parts = append(parts, "signal "+sc.Signal)
	case sc.ExitCode != nil:
		parts = append(parts, fmt.Sprintf("exit %d", *sc.ExitCode))
	default:
		parts = append(parts, sc.LastResult)
	}
	if sc.DurationMS != nil && sc.LastResult != status.ScriptRunning {
		parts = append(parts, Duration(time.Duration(*sc.DurationMS)*time.Millisecond))
	}
	if sc.StartedAt != nil {
		parts = append(parts, When(*sc.StartedAt, now))
	}
	return strings.Join(parts, ", ")
}

// note is the text under a script: why it is in its state, and why it never runs if so.
func note(sc status.Script) string {
	var parts []string
	switch sc.State {
	case status.ScriptSkipped, status.ScriptNotRun, status.ScriptInterrupted:
		if sc.Reason != "" {
			parts = append(parts, sc.Reason)
		}
	}
	switch sc.State {
	case status.ScriptFailed, status.ScriptDownloadFailed, status.ScriptInterrupted:
		if sc.Error != "" && sc.LastResult == sc.State {
			parts = append(parts, sc.Error)
		}
	}
	if sc.NeverRuns != "" {
		parts = append(parts, "never runs on this instance: "+sc.NeverRuns)
	}
	return strings.Join(parts, "; ")
}
