package nodestatus

import (
	"io"
	"strings"
	"unicode/utf8"
)

// DefaultWidth is the width status and plan fit by default (--wide lifts it).
const DefaultWidth = 100

// Table prints aligned columns whose last column is free text (a reason). Lines never end in
// spaces. By default the last column wraps to Width: beside the others (a hanging indent) when
// they take at most half of it, else on lines of its own under the row. Wide prints every row
// on one line.
type Table struct {
	Width  int
	Wide   bool
	Indent string // before every row
	rows   []tableRow
}

type tableRow struct {
	raw   string // a line printed as it is (a stage heading), not aligned
	cells []string
}

// Row adds a row; the last cell is the free text.
func (t *Table) Row(cells ...string) { t.rows = append(t.rows, tableRow{cells: cells}) }

// Line adds a line printed as it is, between rows (the columns stay aligned across it).
func (t *Table) Line(s string) { t.rows = append(t.rows, tableRow{raw: s}) }

func width(s string) int { return utf8.RuneCountInString(s) }

// Write prints the table. When the columns before the free text do not fit the width, each
// row's first cell (a name) gets a line of its own and the other cells go under it.
func (t *Table) Write(w io.Writer) error {
	widths := t.widths(0)
	total := width(t.Indent)
	for _, n := range widths {
		total += n + 2
	}
	var b strings.Builder
	if !t.Wide && t.Width > 0 && total > t.Width {
		sub := &Table{Width: t.Width, Indent: t.Indent + "    "}
		for _, r := range t.rows {
			switch {
			case r.cells == nil:
				sub.rows = append(sub.rows, r)
			case len(r.cells) == 1:
				sub.rows = append(sub.rows, tableRow{raw: t.Indent + r.cells[0]})
			default:
				sub.rows = append(sub.rows, tableRow{raw: t.Indent + r.cells[0]}, tableRow{cells: r.cells[1:]})
			}
		}
		return sub.Write(w)
	}
	for _, r := range t.rows {
		if r.cells == nil {
			b.WriteString(strings.TrimRight(r.raw, " ") + "\n")
			continue
		}
		var line strings.Builder
		line.WriteString(t.Indent)
		last := len(r.cells) - 1
		for i, c := range r.cells[:last] {
			line.WriteString(c)
			line.WriteString(strings.Repeat(" ", widths[i]-width(c)+2))
		}
		text := r.cells[last]
		prefix := line.String()
		switch {
		case text == "":
			b.WriteString(strings.TrimRight(prefix, " ") + "\n")
		case t.Wide || t.Width <= 0 || width(prefix)+width(text) <= t.Width:
			b.WriteString(strings.TrimRight(prefix+text, " ") + "\n")
		case width(prefix) <= t.Width/2:
			lines := Wrap(text, t.Width-width(prefix))
			b.WriteString(prefix + lines[0] + "\n")
			pad := strings.Repeat(" ", width(prefix))
			for _, l := range lines[1:] {
				b.WriteString(pad + l + "\n")
			}
		default:
			b.WriteString(strings.TrimRight(prefix, " ") + "\n")
			pad := t.Indent + "    "
			for _, l := range Wrap(text, t.Width-width(pad)) {
				b.WriteString(pad + l + "\n")
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// widths are the widths of the columns but the last.
func (t *Table) widths(from int) []int {
	var widths []int
	for _, r := range t.rows {
		for i, c := range r.cells[from:] {
			if from+i == len(r.cells)-1 {
				break
			}
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], width(c))
		}
	}
	return widths
}

// Wrap breaks text into lines of at most n characters at spaces (a longer word gets a line of
// its own). Existing newlines are kept.
func Wrap(text string, n int) []string {
	if n < 20 {
		n = 20
	}
	var out []string
	for _, para := range strings.Split(text, "\n") {
		line := ""
		for _, word := range strings.Fields(para) {
			switch {
			case line == "":
				line = word
			case width(line)+1+width(word) <= n:
				line += " " + word
			default:
				out = append(out, line)
				line = word
			}
		}
		out = append(out, line)
	}
	return out
}
