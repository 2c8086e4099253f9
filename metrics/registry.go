package metrics

import (
	"errors"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// NewRegistry returns the process's one registry, already holding the Go
// runtime and process collectors. Host, Worker and any other collector of
// the process register into it; the default global registry is never used,
// so tests can build as many isolated processes as they like.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return reg
}

// Handler serves g in the Prometheus exposition format, for mounting at
// /metrics, or in OpenMetrics to a scraper that asks for it, which is the
// format that carries the latency histograms' exemplars (trace ids). A
// collector that fails mid-scrape does not blank the page: the other
// series are still served and the error is logged by Prometheus as a
// scrape warning.
func Handler(g prometheus.Gatherer) http.Handler {
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError, EnableOpenMetrics: true})
}

// register adds c to reg. Registering a second set with identical
// descriptors into the same registry returns the first one, so that two
// components of one process (a dev process running several agents, say)
// share series instead of panicking. A conflicting registration panics, as
// prometheus.MustRegister does: it is a programming error found at start-up.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if reg == nil {
		return c
	}
	err := reg.Register(c)
	if err == nil {
		return c
	}
	if are, ok := errors.AsType[prometheus.AlreadyRegisteredError](err); ok {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing
		}
	}
	panic(err)
}
