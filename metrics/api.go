package metrics

import "github.com/prometheus/client_golang/prometheus"

// API is the collector set of a host's HTTP API: what it refused. All
// methods are safe for concurrent use, and every method of a nil *API does
// nothing.
type API struct {
	set
	codes   []string
	refused *prometheus.CounterVec
}

// NewAPI builds the API collector set and registers it with reg (nil
// registers nothing). codes is the closed set of refusal codes
// (httpapi.Codes()); any other code is recorded as Other.
func NewAPI(reg prometheus.Registerer, codes []string, opts ...Option) *API {
	o := buildOptions(opts)
	b := builder{constLabels: o.constLabels}
	a := &API{
		codes: append([]string(nil), codes...),
		refused: b.counter("splash_api_refused_total",
			"HTTP API requests, connections and event streams refused or cut, by error code.", "code"),
	}
	a.set = set{a.refused}
	initAll(a.refused, a.codes)
	return register(reg, a)
}

// Refused counts one refusal with code.
func (a *API) Refused(code string) {
	if a == nil {
		return
	}
	a.refused.WithLabelValues(oneOf(code, a.codes)).Inc()
}
