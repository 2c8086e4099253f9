package metrics

import "github.com/prometheus/client_golang/prometheus"

// Option adjusts a Host or Worker collector set.
type Option func(*options)

type options struct {
	constLabels prometheus.Labels
	maxTools    int
	tools       []string
}

func buildOptions(opts []Option) options {
	o := options{maxTools: DefaultMaxTools}
	for _, opt := range opts {
		opt(&o)
	}
	if o.maxTools < 1 {
		o.maxTools = 1
	}
	return o
}

// WithConstLabels attaches fixed labels (a pool or zone name, say) to every
// series of the set. Keep them few and fixed for the process's lifetime;
// prefer Prometheus target labels where the scrape config can add them.
func WithConstLabels(l prometheus.Labels) Option {
	return func(o *options) { o.constLabels = l }
}

// WithMaxTools changes how many distinct tool names the set records before
// folding new ones into Other (DefaultMaxTools unless set; at least 1).
func WithMaxTools(n int) Option {
	return func(o *options) { o.maxTools = n }
}

// WithTools restricts the tool label to the named tools; every other name is
// recorded as Other. A worker knows its tools up front, so this is the
// tightest bound it can give.
func WithTools(tools ...string) Option {
	return func(o *options) { o.tools = append([]string(nil), tools...) }
}
