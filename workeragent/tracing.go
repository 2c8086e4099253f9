package workeragent

import (
	"context"

	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/tracing"
)

// ScopeName is the instrumentation scope of the worker's spans.
const ScopeName = "github.com/splashfabric/splashfabric/workeragent"

// An invocation's spans, in the trace its message's headers name (the
// host's attempt span is their parent; with no trace headers, or tracing
// off, they are a trace of their own or nothing):
//
//	invoke <tool>         from the authenticated message to its ack or nak (consumer)
//	├─ pickup             cancel records and the journal: may it run here?
//	│  └─ dedupe          the journal's claim, or the stored-answer lookup
//	├─ handler <tool>     the handler's run; chunks are its events
//	│  └─ process call    a process tool's call (package toolproc), whose
//	│                     traceparent the tool receives
//	└─ answer             the terminal answer's publish (and journal finish)
//
// The trace headers are read for this and nothing else: a forged one can
// only put the call's spans in another trace. Attributes and events carry
// identifiers, counts and sizes, never an input, a chunk or an error's
// text.

// Attribute keys of the worker's own spans; those it shares with the
// host's are package tracing's.
const (
	attrDelivery  = attribute.Key("splash.delivery")
	attrPickup    = attribute.Key("splash.pickup")
	attrSequence  = attribute.Key("splash.chunk.sequence")
	attrJournal   = attribute.Key("splash.journal")
	attrTakenOver = attribute.Key("splash.taken_over")
)

// startSpan starts the invocation's span under the trace m's headers name.
func (e *execution) startSpan(m jetstream.Msg) {
	parent := fabric.ExtractTrace(context.Background(), m.Headers())
	subject, _ := fabric.InvokeSubject(e.inv.Tool)
	e.tctx, e.span = e.a.tracer.Start(parent, "invoke "+e.inv.Tool,
		trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(tracing.AttrTool.String(e.inv.Tool), tracing.AttrRequest.String(e.inv.RequestID),
			tracing.AttrAttempt.Int64(int64(e.inv.Attempt)), tracing.AttrWorker.String(e.a.cfg.WorkerID),
			attribute.String("messaging.system", "nats"), attribute.String("messaging.destination.name", subject)))
}

// endSpan ends the invocation's span with how it ended.
func (e *execution) endSpan() {
	if e.deliveries > 0 {
		e.span.SetAttributes(attrDelivery.Int64(int64(e.deliveries)))
	}
	if e.outcome != "" {
		e.span.SetAttributes(tracing.AttrOutcome.String(e.outcome))
	}
	if e.outcome == OutcomeFailed || e.outcome == OutcomeIndeterminate {
		e.span.SetStatus(codes.Error, e.outcome)
	}
	e.span.End()
}

// handBack naks a message the agent will not take (it is stopping), and
// ends its span.
func (e *execution) handBack() {
	e.outcome = OutcomeHandedBack
	_ = e.msg.Nak()
	e.endSpan()
}

// child starts a span under the invocation's.
func (e *execution) child(name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	return e.a.tracer.Start(e.tctx, name, trace.WithAttributes(attrs...))
}

// endPickup ends the pickup's span with what it decided.
func (e *execution) endPickup(span trace.Span, proceed bool) {
	if e.pickup == "" {
		e.pickup = "run"
		if !proceed {
			e.pickup = "handed_back"
		}
	}
	span.SetAttributes(attrPickup.String(e.pickup))
	if e.takenOver {
		span.SetAttributes(attrTakenOver.Bool(true))
	}
	span.End()
}

// chunkEvent records a chunk the handler streamed: its sequence and size.
func (e *execution) chunkEvent(k uint32, n int) {
	if e.hspan != nil {
		e.hspan.AddEvent("chunk", trace.WithAttributes(attrSequence.Int64(int64(k)), tracing.AttrBytes.Int(n)))
	}
}
