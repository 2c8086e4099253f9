package fabric

import (
	"context"

	"github.com/nats-io/nats.go"

	"github.com/splashfabric/splashfabric/tracing"
)

// The W3C trace context of an invocation travels in these headers, beside
// the frame's and outside what its tag covers: a receiver reads them for
// tracing only, never to decide what it runs or for whom.
const (
	HeaderTraceParent = "traceparent"
	HeaderTraceState  = "tracestate"
)

// InjectTrace writes ctx's span context into h (HeaderTraceParent and
// HeaderTraceState); nothing when ctx holds none, as when tracing is off.
func InjectTrace(ctx context.Context, h nats.Header) {
	tracing.Inject(ctx, traceCarrier(h))
}

// ExtractTrace returns ctx with the span context of h's trace headers as
// its remote parent, or ctx itself when they hold none that parses.
func ExtractTrace(ctx context.Context, h nats.Header) context.Context {
	return tracing.Extract(ctx, traceCarrier(h))
}

// traceCarrier reads and writes the trace headers by their exact names
// (NATS header names are case-sensitive), refusing a repeated one.
type traceCarrier nats.Header

func (c traceCarrier) Get(key string) string {
	if v := c[key]; len(v) == 1 {
		return v[0]
	}
	return ""
}

func (c traceCarrier) Set(key, value string) { c[key] = []string{value} }

func (c traceCarrier) Keys() []string {
	keys := make([]string, 0, 2)
	for _, k := range []string{HeaderTraceParent, HeaderTraceState} {
		if _, ok := c[k]; ok {
			keys = append(keys, k)
		}
	}
	return keys
}
