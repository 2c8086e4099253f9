// Package hosttrace turns what a host loop reports into OpenTelemetry
// spans: one trace per session, with a span for the session, one for each
// operation and one for each attempt, and the trace context the loop hands
// the transport with each attempt, so the worker's spans join it.
//
// An Observer is a hostloop.Observer (and a hostloop.StartObserver and
// hostloop.PublishObserver): pass it beside the others through
// httpapi.Tee. It builds spans from the loop's calls alone, on the loop
// goroutine, without blocking and without goroutines of its own; the
// provider's batch processor exports them.
//
//	p, _ := tracing.Setup(ctx, tracing.Config{Service: "splash-host"})
//	spans := hosttrace.New(p.TracerProvider())
//	loop, _ := hostloop.StartLoop(hostloop.LoopConfig{..., Observer: httpapi.Tee(events, obs, spans)})
//
// # The spans
//
//	POST /v1/sessions            the submission (package httpapi or mcpserver)
//	└─ session                   from the session's creation to its end
//	   └─ operation <tool>       from the host's claim to the terminal outcome
//	      ├─ attempt <tool>      from the publish to the worker's answer (producer)
//	      │  └─ (the worker's spans, over NATS)
//	      ├─ retry backoff       from a retryable answer to the next publish
//	      └─ attempt <tool>      attempt 2, …
//
// An attempt ends with its outcome (splash.outcome: succeeded, failed,
// timed_out, cancelled or retry); chunks are events on the attempt that
// streamed them, cancellation requests and dispositions events on the
// operation and its attempt. Events carry counts and sizes, never the text
// of an input, a chunk, a result or an error (the audit log's rule).
//
// # Resumed sessions
//
// A session's span and its operations' spans take ids derived from the
// session's trace (tracing.DerivedSpanID), under a provider using
// tracing.NewIDGenerator: a host that resumes a durable session after its
// first process died makes them again under the same ids and from the
// times its ledger kept, so the attempts the first process ended and
// exported keep their parents, and the trace stays one tree. Ids and
// times both come from the session's ledger (workflow.Submitted.Trace).
package hosttrace
