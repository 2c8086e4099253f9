package toolproc_test

import (
	"testing"

	"github.com/splashfabric/splashfabric/metrics"
	"github.com/splashfabric/splashfabric/toolproc"
)

// Every reason a session is poisoned for has a label of its own in the
// worker's metrics, not "other".
func TestPoisonReasonsHaveMetricLabels(t *testing.T) {
	reg := metrics.NewRegistry()
	w := metrics.NewWorker(reg, metrics.WithTools("test.tool"))
	for _, r := range toolproc.PoisonReasons {
		w.ProcessPoisoned("test.tool", r)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "splash_toolproc_poisoned_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" && l.GetValue() == metrics.Other && m.GetCounter().GetValue() != 0 {
					t.Errorf("%v poisonings counted as %q", m.GetCounter().GetValue(), metrics.Other)
				}
			}
		}
	}
}
