package tracing

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/splashfabric/splashfabric/internal/clip"
)

// W3C is the only propagation Splash Fabric speaks: traceparent and
// tracestate, never baggage, which could carry anything.
var W3C propagation.TextMapPropagator = propagation.TraceContext{}

// maxTraceState bounds a tracestate taken from a peer: the W3C limit is
// 32 members of at most 256 bytes each, and anything longer is dropped
// whole rather than parsed.
const maxTraceState = 512

// TraceParent is sc as a W3C traceparent header value, or "" for an
// invalid span context.
func TraceParent(sc trace.SpanContext) string {
	if !sc.IsValid() {
		return ""
	}
	return fmt.Sprintf("00-%s-%s-%s", sc.TraceID(), sc.SpanID(), sc.TraceFlags())
}

// ParseTraceParent reads a W3C traceparent into a remote span context;
// anything else is ErrInvalidTraceParent.
func ParseTraceParent(s string) (trace.SpanContext, error) {
	sc := trace.SpanContextFromContext(W3C.Extract(context.Background(), propagation.MapCarrier{"traceparent": s}))
	if !sc.IsValid() {
		return trace.SpanContext{}, fmt.Errorf("%w: %q", ErrInvalidTraceParent, clip.String(s, clip.Echo))
	}
	return sc, nil
}

// Inject writes ctx's span context into c as traceparent and tracestate;
// it writes nothing when ctx holds no valid span context (tracing off).
func Inject(ctx context.Context, c propagation.TextMapCarrier) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return
	}
	W3C.Inject(ctx, c)
}

// Extract returns ctx with the remote span context c carries, if any
// valid one. A value that does not parse is ignored: a peer's trace
// context decides nothing but which trace a span joins.
func Extract(ctx context.Context, c propagation.TextMapCarrier) context.Context {
	if c.Get("traceparent") == "" {
		return ctx
	}
	return W3C.Extract(ctx, boundedCarrier{c})
}

// boundedCarrier drops a tracestate too long to be a valid one before the
// propagator parses it.
type boundedCarrier struct{ propagation.TextMapCarrier }

func (b boundedCarrier) Get(key string) string {
	v := b.TextMapCarrier.Get(key)
	if len(v) > maxTraceState {
		return ""
	}
	return v
}
