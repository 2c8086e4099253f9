package metrics

import "github.com/prometheus/client_golang/prometheus"

// set is a group of collectors registered and gathered as one, so a Host or
// Worker is itself a prometheus.Collector.
type set []prometheus.Collector

// Describe implements prometheus.Collector.
func (s set) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range s {
		c.Describe(ch)
	}
}

// Collect implements prometheus.Collector.
func (s set) Collect(ch chan<- prometheus.Metric) {
	for _, c := range s {
		c.Collect(ch)
	}
}

// builder creates vectors that share the set's constant labels.
type builder struct{ constLabels prometheus.Labels }

func (b builder) counter(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: b.constLabels}, labels)
}

func (b builder) gauge(name, help string, labels ...string) *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: b.constLabels}, labels)
}

func (b builder) histogram(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets, ConstLabels: b.constLabels}, labels)
}

// initAll creates the child of v for each value, so the series exists at
// zero before the first event.
func initAll(v *prometheus.CounterVec, values []string, prefix ...string) {
	for _, val := range values {
		v.WithLabelValues(append(append([]string(nil), prefix...), val)...)
	}
}
