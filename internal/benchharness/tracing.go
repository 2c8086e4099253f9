package benchharness

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/splashfabric/splashfabric/tracing"
)

// tracedProvider is what a traced runner exports with: every span sampled
// (parent-based, always on, the default), batched and sent over OTLP/HTTP
// protobuf, as `splash host` does with OTEL_EXPORTER_OTLP_ENDPOINT set, to
// an in-process endpoint that reads each export and drops it, so the
// figures carry the cost of making, encoding and sending spans and none
// of a backend's.
func tracedProvider(b *testing.B) *sdktrace.TracerProvider {
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	exp, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(sink.URL+"/v1/traces"))
	must(b, err)
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithIDGenerator(tracing.NewIDGenerator()))
	b.Cleanup(func() {
		_ = tp.Shutdown(context.Background())
		sink.Close()
	})
	return tp
}
