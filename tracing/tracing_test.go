package tracing_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/splashfabric/splashfabric/tracing"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestSetupReadsTheEnvironment(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		enabled bool
		wantErr error
	}{
		{"nothing set", nil, false, nil},
		{"an endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, true, nil},
		{"a traces endpoint", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, true, nil},
		{"disabled", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:4318", "OTEL_SDK_DISABLED": "true"}, false, nil},
		{"exporter none", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:4318", "OTEL_TRACES_EXPORTER": "none"}, false, nil},
		{"http/protobuf", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}, true, nil},
		{"grpc", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, false, tracing.ErrUnsupportedProtocol},
		{"traces protocol wins", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"}, true, nil},
		{"zipkin", map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, false, tracing.ErrUnsupportedExporter},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := tracing.Setup(context.Background(), tracing.Config{Service: "splash-test", Getenv: env(tc.env)})
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Setup: %v, want %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			defer p.Shutdown(context.Background())
			if p.Enabled() != tc.enabled {
				t.Fatalf("enabled %v, want %v", p.Enabled(), tc.enabled)
			}
			_, span := p.TracerProvider().Tracer("t").Start(context.Background(), "s")
			if span.IsRecording() != tc.enabled {
				t.Errorf("span recording %v", span.IsRecording())
			}
			span.End()
		})
	}
}

func TestTraceParentRoundTrip(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	sc, err := tracing.ParseTraceParent(tp)
	if err != nil || !sc.IsRemote() || !sc.IsSampled() {
		t.Fatalf("parse: %v, %v", sc, err)
	}
	if got := tracing.TraceParent(sc); got != tp {
		t.Fatalf("TraceParent %q, want %q", got, tp)
	}
	for _, bad := range []string{"", "00-zz", "00-00000000000000000000000000000000-00f067aa0ba902b7-01", strings.Repeat("x", 300)} {
		if _, err := tracing.ParseTraceParent(bad); !errors.Is(err, tracing.ErrInvalidTraceParent) {
			t.Errorf("ParseTraceParent(%.20q): %v", bad, err)
		}
	}
	if tracing.TraceParent(trace.SpanContext{}) != "" {
		t.Error("an invalid span context has a traceparent")
	}
}

// A span started with an id takes it; its children take their own.
func TestStartWithID(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithIDGenerator(tracing.NewIDGenerator()))
	defer tp.Shutdown(context.Background())
	tr := tp.Tracer("t")
	ctx, root := tr.Start(context.Background(), "root")
	id := tracing.DerivedSpanID(root.SpanContext().TraceID(), "session/s-1")
	if id != tracing.DerivedSpanID(root.SpanContext().TraceID(), "session/s-1") || id == tracing.DerivedSpanID(root.SpanContext().TraceID(), "session/s-2") {
		t.Fatal("derived ids are not a function of trace and name")
	}
	ctx, s := tracing.StartWithID(ctx, tr, id, "session")
	_, child := tr.Start(ctx, "child")
	if s.SpanContext().SpanID() != id || child.SpanContext().SpanID() == id {
		t.Fatalf("session %s, child %s, want %s and another", s.SpanContext().SpanID(), child.SpanContext().SpanID(), id)
	}
}

// Extract ignores a tracestate too long to be valid, and anything that is
// not a traceparent; Inject writes nothing without a span.
func TestExtractAndInject(t *testing.T) {
	c := propagation.MapCarrier{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "tracestate": strings.Repeat("a=b,", 200)}
	sc := trace.SpanContextFromContext(tracing.Extract(context.Background(), c))
	if !sc.IsValid() || sc.TraceState().Len() != 0 {
		t.Fatalf("extracted %v with tracestate %q", sc, sc.TraceState())
	}
	if sc := trace.SpanContextFromContext(tracing.Extract(context.Background(), propagation.MapCarrier{"traceparent": "garbage"})); sc.IsValid() {
		t.Fatalf("garbage extracted as %v", sc)
	}
	out := propagation.MapCarrier{}
	tracing.Inject(context.Background(), out)
	if len(out) != 0 {
		t.Fatalf("injected %v without a span", out)
	}
}
