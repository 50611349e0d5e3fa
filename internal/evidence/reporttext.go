package evidence

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
)

// clean makes text from a summary safe for a terminal: control characters (escape sequences
// a hostile summary could carry) are shown escaped.
func clean(s string) string {
	if strings.IndexFunc(s, func(r rune) bool { return unicode.IsControl(r) || r == unicode.ReplacementChar }) < 0 {
		return s
	}
	q := strconv.QuoteToASCII(s)
	return q[1 : len(q)-1]
}

func when(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// WriteReportText prints a report: a heading, one row per stage and script with failures
// (the scripts that never failed are counted in the heading), then the skipped objects.
func WriteReportText(w io.Writer, r *Report) error {
	fmt.Fprintf(w, "report %s: %d summaries of %d instances", r.URI, r.Summaries, r.Instances)
	if !r.Since.IsZero() {
		fmt.Fprintf(w, " since %s", r.Since.UTC().Format(time.RFC3339))
	}
	fmt.Fprintf(w, "; %d skipped\n", len(r.Skipped))
	failing, clean0 := 0, 0
	for _, row := range r.Scripts {
		if row.Failures > 0 {
			failing++
		} else {
			clean0++
		}
	}
	if failing == 0 {
		fmt.Fprintf(w, "no failures (%d scripts seen)\n", clean0)
	} else {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "STAGE\tSCRIPT\tFAILURES\tNODES\tFIRST SEEN\tLAST SEEN\tEXIT (MOST COMMON)\tLAST LOG LINE (LATEST FAILURE)")
		for _, row := range r.Scripts {
			if row.Failures == 0 {
				continue
			}
			code := "-"
			if row.CommonExitCode != nil {
				code = fmt.Sprintf("%d (%d of %d)", *row.CommonExitCode, row.CommonExitCount, row.Failures)
			}
			last := row.LastLogLine
			if last == "" {
				last = row.LastError
			}
			fmt.Fprintf(tw, "%s\t%s\t%d/%d\t%d\t%s\t%s\t%s\t%s\n", clean(row.Stage), clean(row.Script), row.Failures, row.Boots, row.Nodes,
				when(row.FirstSeen), when(row.LastSeen), code, clean(last))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if clean0 > 0 {
			fmt.Fprintf(w, "%d more scripts never failed\n", clean0)
		}
	}
	if len(r.Skipped) > 0 {
		fmt.Fprintf(w, "skipped %d objects:\n", len(r.Skipped))
		for _, s := range r.Skipped {
			fmt.Fprintf(w, "  %s: %s\n", clean(s.Key), clean(s.Reason))
		}
	}
	return nil
}

// WriteReportJSON prints a report as JSON (every script, failed or not).
func WriteReportJSON(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// ParseSince reads --since: a duration back from now ("36h", "7d"), an RFC 3339 time, or a
// date (YYYY-MM-DD, UTC).
func ParseSince(s string, now time.Time) (time.Time, error) {
	if n, ok := strings.CutSuffix(s, "d"); ok {
		if days, err := strconv.Atoi(n); err == nil && days >= 0 {
			return now.Add(-time.Duration(days) * 24 * time.Hour), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse("2006-01-02", s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("--since %q: a duration (36h, 7d), an RFC 3339 time or a date (2026-11-30)", s)
}
