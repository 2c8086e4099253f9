package metrics_test

import (
	"bytes"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

// sampleValue returns the counter or gauge value, or the histogram's sample
// count, of the series name{labels} in families.
func sampleValue(families map[string]*dto.MetricFamily, name string, labels map[string]string) (float64, bool) {
	m := findMetric(families, name, labels)
	switch {
	case m == nil:
		return 0, false
	case m.GetHistogram() != nil:
		return float64(m.GetHistogram().GetSampleCount()), true
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue(), true
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue(), true
	}
	return 0, false
}

// bucketCount returns the cumulative count of the histogram bucket with
// upper bound le, or -1 when there is none.
func bucketCount(families map[string]*dto.MetricFamily, name string, labels map[string]string, le float64) float64 {
	m := findMetric(families, name, labels)
	for _, b := range m.GetHistogram().GetBucket() {
		if b.GetUpperBound() == le {
			return float64(b.GetCumulativeCount())
		}
	}
	return -1
}

// findMetric returns the series of name whose labels are exactly labels.
func findMetric(families map[string]*dto.MetricFamily, name string, labels map[string]string) *dto.Metric {
	for _, m := range families[name].GetMetric() {
		got := make(map[string]string, len(m.GetLabel()))
		for _, lp := range m.GetLabel() {
			got[lp.GetName()] = lp.GetValue()
		}
		if len(got) != len(labels) {
			continue
		}
		match := true
		for k, v := range labels {
			if got[k] != v {
				match = false
				break
			}
		}
		if match {
			return m
		}
	}
	return nil
}

var fqNamePattern = regexp.MustCompile(`fqName: "([^"]+)"`)

// describedNames lists the metric names the collectors describe, sorted.
func describedNames(cs ...prometheus.Collector) []string {
	ch := make(chan *prometheus.Desc)
	go func() {
		for _, c := range cs {
			c.Describe(ch)
		}
		close(ch)
	}()
	var names []string
	for d := range ch {
		if m := fqNamePattern.FindStringSubmatch(d.String()); m != nil {
			names = append(names, m[1])
		}
	}
	sort.Strings(names)
	return names
}

// exposition joins lines into expected exposition text.
func exposition(lines ...string) io.Reader {
	return strings.NewReader(strings.Join(lines, "\n") + "\n")
}

// gatherSet gathers c alone through a throwaway registry.
func gatherSet(t testing.TB, c prometheus.Collector) map[string]*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]*dto.MetricFamily, len(fams))
	for _, mf := range fams {
		out[mf.GetName()] = mf
	}
	return out
}

// nonZeroSeries lists the label sets of name whose value is not zero, each
// as {k="v",...} with keys sorted.
func nonZeroSeries(t testing.TB, c prometheus.Collector, name string) []string {
	t.Helper()
	var out []string
	for _, m := range gatherSet(t, c)[name].GetMetric() {
		if m.GetCounter().GetValue() == 0 && m.GetGauge().GetValue() == 0 {
			continue
		}
		pairs := make([]string, 0, len(m.GetLabel()))
		for _, lp := range m.GetLabel() {
			pairs = append(pairs, lp.GetName()+`="`+lp.GetValue()+`"`)
		}
		sort.Strings(pairs)
		out = append(out, "{"+strings.Join(pairs, ",")+"}")
	}
	sort.Strings(out)
	return out
}

// nonZero is nonZeroSeries for examples, which have no testing.TB.
func nonZero(c prometheus.Collector, name string) []string {
	return nonZeroSeries(exampleTB{}, c, name)
}

type exampleTB struct{ testing.TB }

func (exampleTB) Helper()           {}
func (exampleTB) Fatal(args ...any) { panic(fmt.Sprint(args...)) }
