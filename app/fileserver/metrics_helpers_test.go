package fileserver

import (
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// metricFamilies are scraped or gathered metrics by name.
type metricFamilies map[string]*dto.MetricFamily

// parseMetrics parses a /metrics page in the text format.
func parseMetrics(t *testing.T, text string) metricFamilies {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v\n%s", err, text)
	}
	return fams
}

// gatherMetrics gathers reg in-process.
func gatherMetrics(t *testing.T, reg prometheus.Gatherer) metricFamilies {
	t.Helper()
	got, err := reg.Gather()
	if err != nil {
		t.Fatalf("gathering metrics: %v", err)
	}
	fams := metricFamilies{}
	for _, f := range got {
		fams[f.GetName()] = f
	}
	return fams
}

// value returns the sum over the series of name whose labels include
// labels (name, value pairs) of a counter's or gauge's value, a
// histogram's or summary's sample count. ok is false when no series
// matches.
func (fs metricFamilies) value(name string, labels ...string) (v float64, ok bool) {
	f := fs[name]
	if f == nil {
		return 0, false
	}
series:
	for _, m := range f.GetMetric() {
		for i := 0; i+1 < len(labels); i += 2 {
			found := false
			for _, lp := range m.GetLabel() {
				if lp.GetName() == labels[i] && lp.GetValue() == labels[i+1] {
					found = true
				}
			}
			if !found {
				continue series
			}
		}
		ok = true
		switch {
		case m.Counter != nil:
			v += m.Counter.GetValue()
		case m.Gauge != nil:
			v += m.Gauge.GetValue()
		case m.Histogram != nil:
			v += float64(m.Histogram.GetSampleCount())
		case m.Summary != nil:
			v += float64(m.Summary.GetSampleCount())
		case m.Untyped != nil:
			v += m.Untyped.GetValue()
		}
	}
	return v, ok
}

// names lists the families, for failure messages.
func (fs metricFamilies) names() string {
	var n []string
	for k := range fs {
		n = append(n, k)
	}
	sort.Strings(n)
	return strings.Join(n, " ")
}
