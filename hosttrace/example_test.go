package hosttrace_test

import (
	"context"
	"fmt"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/hostloop"
	"github.com/splashfabric/splashfabric/hosttrace"
	"github.com/splashfabric/splashfabric/toolspec"
	"github.com/splashfabric/splashfabric/tracing"
)

// The spans of a session whose one call succeeds, each with its parent.
func Example() {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithIDGenerator(tracing.NewIDGenerator()))
	defer tp.Shutdown(context.Background())
	tr := hostloop.NewMemTransport(16)
	upper, err := toolspec.Spec{Name: "text.upper"}.Compile()
	if err != nil {
		panic(err)
	}
	l, err := hostloop.StartLoop(hostloop.LoopConfig{
		Transport: tr, HostID: "h1",
		Catalog:  func(rt *host.Runtime) error { return rt.RegisterTool(upper) },
		Observer: hosttrace.New(tp),
	})
	if err != nil {
		panic(err)
	}
	defer l.Stop()
	// The submission's span (the API makes it) names the session's trace.
	_, submit := tp.Tracer("api").Start(context.Background(), "POST /v1/sessions")
	_, err = l.Submit(context.Background(), hostloop.Submission{
		Source: `return await tool.start("text.upper", "hi")`, Trace: tracing.TraceParent(submit.SpanContext()),
	})
	if err != nil {
		panic(err)
	}
	submit.End()
	inv, _ := tr.Next(time.Minute)
	tr.Succeed(inv, "HI")
	for len(rec.Ended()) < 4 {
		time.Sleep(time.Millisecond)
	}
	names := map[string]string{}
	for _, s := range rec.Ended() {
		names[s.SpanContext().SpanID().String()] = s.Name()
	}
	for _, s := range rec.Ended() {
		parent := names[s.Parent().SpanID().String()]
		if parent == "" {
			parent = "(a root)"
		}
		fmt.Printf("%s <- %s\n", s.Name(), parent)
	}
	// Output:
	// POST /v1/sessions <- (a root)
	// attempt text.upper <- operation text.upper
	// operation text.upper <- session
	// session <- POST /v1/sessions
}
