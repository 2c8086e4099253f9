package metrics_test

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"sort"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// collectAndCompare does what prometheus/testutil.CollectAndCompare does:
// it gathers c, keeps the named families, and compares their exposition
// text with expected. It lives here because the testutil package pulls in a
// diffing module this build does not carry; promlint, which it wraps for
// linting, is used directly.
func collectAndCompare(c prometheus.Collector, expected io.Reader, names ...string) error {
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		return err
	}
	got, err := reg.Gather()
	if err != nil {
		return err
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	wantMap, err := parser.TextToMetricFamilies(expected)
	if err != nil {
		return fmt.Errorf("parse expected: %w", err)
	}
	want := make([]*dto.MetricFamily, 0, len(wantMap))
	for _, mf := range wantMap {
		want = append(want, mf)
	}
	gotText, err := encode(filter(got, names))
	if err != nil {
		return err
	}
	wantText, err := encode(filter(want, names))
	if err != nil {
		return err
	}
	if gotText != wantText {
		return fmt.Errorf("exposition differs\n--- got\n%s--- want\n%s", gotText, wantText)
	}
	return nil
}

func filter(fams []*dto.MetricFamily, names []string) []*dto.MetricFamily {
	var out []*dto.MetricFamily
	for _, mf := range fams {
		if len(names) == 0 || slices.Contains(names, mf.GetName()) {
			out = append(out, mf)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GetName() < out[j].GetName() })
	return out
}

// encode writes fams as text; the parser and the registry both sort series
// by label values, so equal content gives equal text.
func encode(fams []*dto.MetricFamily) (string, error) {
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range fams {
		if err := enc.Encode(mf); err != nil {
			return "", err
		}
	}
	return buf.String(), nil
}
