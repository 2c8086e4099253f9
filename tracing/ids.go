package tracing

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"math/rand/v2"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// spanIDKey carries a span id the next span started with the context takes.
type spanIDKey struct{}

// WithSpanID returns ctx carrying id: a span started with it under a
// provider using NewIDGenerator takes id instead of a random one. Under
// any other provider the id is ignored and the span gets its own. The
// context Start returns still carries it; StartWithID does not.
func WithSpanID(ctx context.Context, id trace.SpanID) context.Context {
	return context.WithValue(ctx, spanIDKey{}, id)
}

// StartWithID starts a span named name whose id is id (see WithSpanID),
// and returns a context holding it in which later spans take ids of their
// own.
func StartWithID(ctx context.Context, tracer trace.Tracer, id trace.SpanID, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	ctx, span := tracer.Start(WithSpanID(ctx, id), name, opts...)
	return context.WithValue(ctx, spanIDKey{}, nil), span
}

// DerivedSpanID is the span id of name within the trace traceID: the same
// for the same two, whichever process asks, so a span a host makes again
// after a restart (a resumed session's) is the span the first one began.
func DerivedSpanID(traceID trace.TraceID, name string) trace.SpanID {
	h := sha256.New()
	h.Write(traceID[:])
	h.Write([]byte(name))
	var sum [sha256.Size]byte
	var id trace.SpanID
	copy(id[:], h.Sum(sum[:0]))
	if !id.IsValid() {
		id[7] = 1
	}
	return id
}

// NewIDGenerator returns the ids of a provider that honours WithSpanID;
// every other id is random.
func NewIDGenerator() sdktrace.IDGenerator { return idGenerator{} }

type idGenerator struct{}

func (idGenerator) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	var t trace.TraceID
	for !t.IsValid() {
		binary.BigEndian.PutUint64(t[:8], rand.Uint64())
		binary.BigEndian.PutUint64(t[8:], rand.Uint64())
	}
	return t, spanID(ctx)
}

func (idGenerator) NewSpanID(ctx context.Context, _ trace.TraceID) trace.SpanID {
	return spanID(ctx)
}

func spanID(ctx context.Context) trace.SpanID {
	if id, ok := ctx.Value(spanIDKey{}).(trace.SpanID); ok && id.IsValid() {
		return id
	}
	var id trace.SpanID
	for !id.IsValid() {
		binary.BigEndian.PutUint64(id[:], rand.Uint64())
	}
	return id
}
