package hostmetrics_test

import (
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/splashfabric/splashfabric/hostloop"
	"github.com/splashfabric/splashfabric/protocol"
)

// series reads one series of reg: a counter's or gauge's value, or a
// histogram's sample count. labels is "k=v,k=v"; a series that does not
// exist reads as -1, so a test can tell absent from zero.
func series(t *testing.T, reg *prometheus.Registry, name, labels string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if labelString(m) != labels {
				continue
			}
			switch {
			case m.Counter != nil:
				return m.Counter.GetValue()
			case m.Gauge != nil:
				return m.Gauge.GetValue()
			case m.Histogram != nil:
				return float64(m.Histogram.GetSampleCount())
			}
		}
	}
	return -1
}

func labelString(m *dto.Metric) string {
	var parts []string
	for _, l := range m.GetLabel() {
		parts = append(parts, l.GetName()+"="+l.GetValue())
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// chanTransport is the loop's in-memory transport with the cancellations
// on a channel too: the test is the worker. It stands in for
// hostnats.HostTransport, which is tested against NATS in its own package
// and end to end by cmd/splash.
type chanTransport struct {
	*hostloop.MemTransport
	invokes <-chan protocol.Invoke
	cancels chan protocol.Cancel
}

func newChanTransport() *chanTransport {
	m := hostloop.NewMemTransport(64)
	c := &chanTransport{MemTransport: m, invokes: m.Invocations(), cancels: make(chan protocol.Cancel, 64)}
	m.OnCancel = func(cl protocol.Cancel) { c.cancels <- cl }
	return c
}

func (c *chanTransport) send(m protocol.WorkerMessage) { c.Message(m) }
