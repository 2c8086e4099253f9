// Package tracing sets up OpenTelemetry tracing for Splash Fabric's
// processes and holds the few helpers every side shares: the W3C trace
// context as it travels between them, and span ids a restarted host can
// make again.
//
// A process calls Setup once. It reads the standard OTEL_* variables and
// is off unless an OTLP endpoint is named:
//
//	OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 splash dev
//
// exports every session's spans over OTLP/HTTP (protobuf), sampled by
// OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG (parent-based, always on
// by default), named by OTEL_SERVICE_NAME (default: the process's role,
// "splash-host", "splash-worker" or "splash-dev"), batched as OTEL_BSP_*
// say. With no endpoint, with OTEL_TRACES_EXPORTER=none or with
// OTEL_SDK_DISABLED=true, Setup returns a Provider whose tracers record
// nothing and cost a branch per span.
//
//	p, err := tracing.Setup(ctx, tracing.Config{Service: "splash-host"})
//	defer p.Shutdown(context.Background())
//	tracer := p.TracerProvider().Tracer("github.com/splashfabric/splashfabric/hosttrace")
//
// # The trace between processes
//
// Trace context travels as W3C traceparent and tracestate, and only them:
// in the headers of an invocation's NATS message (package fabric), in the
// traceparent field of a process tool's request (package toolproc), and in
// a durable session's ledger (workflow.Submitted.Trace, as TraceParent
// writes it). It is never covered by a frame's tag and never trusted for
// anything but tracing: a forged traceparent can put a call into another
// trace, and nothing else.
//
// # Span ids that survive a restart
//
// A durable session outlives the process that started it, but a span
// that never ended is never exported: the session's span would be lost
// with a killed host, and the spans its operations ended would point at a
// parent that never arrives. The IDGenerator that Setup installs takes a
// span id from the context when one is put there (WithSpanID), so a host
// that resumes a session makes its span again under the id the first
// process gave it (DerivedSpanID of the trace and the session), and the
// trace stays one tree.
package tracing
