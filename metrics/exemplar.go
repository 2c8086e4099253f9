package metrics

import "github.com/prometheus/client_golang/prometheus"

// ExemplarTraceID is the exemplar label the latency histograms carry: the
// trace of an observation, which Grafana links to the trace backend.
const ExemplarTraceID = "trace_id"

// observe records v in h, with traceID (32 hex digits, a sampled trace's)
// as its exemplar when it is set.
func observe(h prometheus.Observer, v float64, traceID string) {
	if traceID != "" {
		if eo, ok := h.(prometheus.ExemplarObserver); ok {
			eo.ObserveWithExemplar(v, prometheus.Labels{ExemplarTraceID: traceID})
			return
		}
	}
	h.Observe(v)
}
