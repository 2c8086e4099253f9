package mcpserver_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/splashfabric/splashfabric/mcpserver"
)

// callerTrace is the caller's span context in W3C form; the call's
// submission span must join its trace, as POST /v1/sessions does.
const (
	callerTrace   = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	callerTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
)

// traceHeader sets a traceparent header on every request.
type traceHeader struct{ next http.RoundTripper }

func (h traceHeader) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("traceparent", callerTrace)
	return h.next.RoundTrip(r)
}

func TestCallJoinsTheCallersTrace(t *testing.T) {
	cases := []struct {
		name string
		// call makes one t.sum call through s.
		call func(t *testing.T, f *fixture, s *mcpserver.Server) (*mcp.CallToolResult, error)
	}{
		{"meta traceparent", func(t *testing.T, f *fixture, s *mcpserver.Server) (*mcp.CallToolResult, error) {
			params := &mcp.CallToolParams{Name: "t.sum", Arguments: map[string]any{"numbers": []int{2, 3}}}
			params.Meta = mcp.Meta{"traceparent": callerTrace}
			return connect(t, s, nil).CallTool(context.Background(), params)
		}},
		{"http header", func(t *testing.T, f *fixture, s *mcpserver.Server) (*mcp.CallToolResult, error) {
			srv := f.api(t, s.Handler())
			tr := &mcp.StreamableClientTransport{
				Endpoint:   srv.URL + "/mcp",
				HTTPClient: &http.Client{Transport: bearer{testToken, traceHeader{http.DefaultTransport}}},
				MaxRetries: -1,
			}
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(context.Background(), tr, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cs.Close() })
			return cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "t.sum", Arguments: map[string]any{"numbers": []int{2, 3}}})
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			rec := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
			t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
			s, err := mcpserver.New(mcpserver.Config{Catalog: f.set, Runner: &mcpserver.LoopRunner{Backend: f.loop, Events: f.events, Tracer: tp}, Expose: []string{"t.sum"}})
			if err != nil {
				t.Fatal(err)
			}
			res, err := tc.call(t, f, s)
			if err != nil || textOf(res) != `{"sum":5}` {
				t.Fatalf("t.sum = %+v, %v", res, err)
			}
			var found bool
			for _, sp := range rec.Ended() {
				if sp.Name() != "mcp tools/call" {
					continue
				}
				found = true
				if got := sp.SpanContext().TraceID().String(); got != callerTraceID {
					t.Fatalf("submission span in trace %s, want the caller's %s", got, callerTraceID)
				}
				if got := sp.Parent().SpanID().String(); got != "00f067aa0ba902b7" {
					t.Fatalf("submission span's parent %s, want the caller's span", got)
				}
			}
			if !found {
				t.Fatal("no submission span")
			}
		})
	}
}
