// Package metricstest checks Prometheus text the way a monitoring pipeline reads it: parsed by
// github.com/prometheus/common/expfmt and linted by client_golang's promlint. Test-only.
package metricstest

import (
	"bytes"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Parse parses text in the Prometheus text format and lints it; any parse error or lint
// problem fails the test. It returns the families by name.
func Parse(t testing.TB, text []byte) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		t.Fatalf("metrics do not parse: %v\n%s", err, text)
	}
	problems, err := promlint.New(bytes.NewReader(text)).Lint()
	if err != nil {
		t.Fatalf("promlint: %v", err)
	}
	if len(problems) > 0 {
		var b strings.Builder
		for _, p := range problems {
			b.WriteString(p.Metric + ": " + p.Text + "\n")
		}
		t.Fatalf("promlint problems:\n%s", b.String())
	}
	return fams
}

// Value returns the value of the sample of family name whose labels include all of labels
// (name, value pairs); ok is false when there is none. It fails the test when more than one
// sample matches.
func Value(t testing.TB, fams map[string]*dto.MetricFamily, name string, labels ...string) (float64, bool) {
	t.Helper()
	f := fams[name]
	if f == nil {
		return 0, false
	}
	var found []*dto.Metric
	for _, m := range f.Metric {
		if matches(m, labels) {
			found = append(found, m)
		}
	}
	switch len(found) {
	case 0:
		return 0, false
	case 1:
	default:
		t.Fatalf("%s%v: %d samples match", name, labels, len(found))
	}
	m := found[0]
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue(), true
	case m.Gauge != nil:
		return m.Gauge.GetValue(), true
	case m.Untyped != nil:
		return m.Untyped.GetValue(), true
	}
	t.Fatalf("%s: not a counter, gauge or untyped sample", name)
	return 0, false
}

// LabelValues lists the values of label among family name's samples whose labels include
// labels, sorted.
func LabelValues(fams map[string]*dto.MetricFamily, name, label string, labels ...string) []string {
	var out []string
	if f := fams[name]; f != nil {
		for _, m := range f.Metric {
			if !matches(m, labels) {
				continue
			}
			for _, lp := range m.Label {
				if lp.GetName() == label {
					out = append(out, lp.GetValue())
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

func matches(m *dto.Metric, labels []string) bool {
	for i := 0; i+1 < len(labels); i += 2 {
		ok := false
		for _, lp := range m.Label {
			if lp.GetName() == labels[i] && lp.GetValue() == labels[i+1] {
				ok = true
			}
		}
		if !ok {
			return false
		}
	}
	return true
}
