package workeragent_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/internal/tooltest"
	"github.com/splashfabric/splashfabric/metrics"
	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/workeragent"
)

// publishTraced publishes inv as the host does, with header values set
// as given (the trace headers among them).
func (e *env) publishTraced(inv protocol.Invoke, headers map[string]string) {
	e.t.Helper()
	m, err := e.codec.SealInvoke(inv)
	must(e.t, err)
	m.Subject, err = fabric.InvokeSubject(inv.Tool)
	must(e.t, err)
	m.Header.Set(jetstream.MsgIDHeader, fmt.Sprintf("%s/%d", inv.IdempotencyKey, inv.Attempt))
	m.Header.Set(fabric.HeaderHost, e.hostID)
	for k, v := range headers {
		m.Header[k] = []string{v}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = e.js.PublishMsg(ctx, m)
	must(e.t, err)
}

func named(rec *tracetest.SpanRecorder, name string) sdktrace.ReadOnlySpan {
	for _, s := range rec.Ended() {
		if s.Name() == name {
			return s
		}
	}
	return nil
}

// The worker's spans hang under the span the invocation's trace headers
// name: the call, its pickup and dedupe, its handler (with its chunks as
// events) and its answer; the handler's context carries the trace.
func TestInvocationSpansJoinTheHostsTrace(t *testing.T) {
	e := newEnv(t)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	handlerTrace := make(chan trace.SpanContext, 1)
	reg := prometheus.NewRegistry()
	e.startAgentWith("w1", func(c *workeragent.Config) {
		c.Tracer, c.Observer = tp, metrics.NewWorker(reg)
	}, func(a *workeragent.Agent) {
		must(t, a.HandleTool(tooltest.Text(t, "t.trace"), workeragent.HandlerFunc(func(ctx context.Context, call *workeragent.Call) (workeragent.Output, error) {
			handlerTrace <- trace.SpanContextFromContext(ctx)
			_ = call.Stream.Write("one")
			return workeragent.Result("done"), nil
		})))
	})
	ctx, attempt := tp.Tracer("host").Start(context.Background(), "attempt t.trace", trace.WithSpanKind(trace.SpanKindProducer))
	h := map[string][]string{}
	fabric.InjectTrace(ctx, h)
	inv := e.newInvoke("t.trace", "x")
	inv.Stream = &protocol.StreamLimits{MaxChunks: 4, MaxChunkBytes: 64, MaxSourceBytes: 256, MaxReleasedBytes: 256}
	e.publishTraced(inv, map[string]string{fabric.HeaderTraceParent: h[fabric.HeaderTraceParent][0]})
	if r := e.result(t); r.Status != protocol.ResultSucceeded {
		t.Fatalf("result %+v", r)
	}
	attempt.End()
	testwait.Until(t, 0, "the invocation's span", func() bool { return named(rec, "invoke t.trace") != nil })

	call := named(rec, "invoke t.trace")
	if call.Parent().SpanID() != attempt.SpanContext().SpanID() || call.SpanContext().TraceID() != attempt.SpanContext().TraceID() {
		t.Fatalf("invoke span under %s in %s, want the attempt %s", call.Parent().SpanID(), call.SpanContext().TraceID(), attempt.SpanContext().SpanID())
	}
	if call.SpanKind() != trace.SpanKindConsumer {
		t.Errorf("invoke span kind %s", call.SpanKind())
	}
	for _, name := range []string{"pickup", "handler t.trace", "answer"} {
		s := named(rec, name)
		if s == nil || s.Parent().SpanID() != call.SpanContext().SpanID() {
			t.Errorf("span %q missing or not under the invocation's", name)
		}
	}
	if d, p := named(rec, "dedupe"), named(rec, "pickup"); d == nil || d.Parent().SpanID() != p.SpanContext().SpanID() {
		t.Error("the journal's dedupe is not a span under the pickup")
	}
	hs := named(rec, "handler t.trace")
	if sc := testwait.Receive(t, 0, "the handler's trace", handlerTrace); sc.SpanID() != hs.SpanContext().SpanID() {
		t.Errorf("the handler's context holds span %s, want its own span %s", sc.SpanID(), hs.SpanContext().SpanID())
	}
	if ev := hs.Events(); len(ev) != 1 || ev[0].Name != "chunk" {
		t.Errorf("handler events %v, want one chunk", ev)
	}
	for _, a := range call.Attributes() {
		if string(a.Key) == "splash.outcome" && a.Value.AsString() != workeragent.OutcomeSucceeded {
			t.Errorf("invocation outcome %q", a.Value.AsString())
		}
	}
	// The run's duration links to its trace.
	families, err := reg.Gather()
	must(t, err)
	var ex []string
	for _, f := range families {
		if f.GetName() != "splash_worker_handler_duration_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, b := range m.GetHistogram().GetBucket() {
				for _, l := range b.GetExemplar().GetLabel() {
					ex = append(ex, l.GetName()+"="+l.GetValue())
				}
			}
		}
	}
	if want := "trace_id=" + attempt.SpanContext().TraceID().String(); len(ex) != 1 || ex[0] != want {
		t.Errorf("handler duration exemplars %v, want [%s]", ex, want)
	}
}

// A trace header that does not parse changes nothing but the trace: the
// call runs, its spans start a trace of their own.
func TestBadTraceHeaderOnlyLosesTheTrace(t *testing.T) {
	e := newEnv(t)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	e.startAgentWith("w1", func(c *workeragent.Config) { c.Tracer = tp }, func(a *workeragent.Agent) {
		must(t, a.HandleTool(tooltest.Text(t, "t.trace"), workeragent.HandlerFunc(func(context.Context, *workeragent.Call) (workeragent.Output, error) {
			return workeragent.Result("done"), nil
		})))
	})
	for _, bad := range []string{"00-zz-not-a-trace", "00-00000000000000000000000000000000-0000000000000000-01", string(make([]byte, 4096))} {
		e.publishTraced(e.newInvoke("t.trace", "x"), map[string]string{fabric.HeaderTraceParent: bad, fabric.HeaderTraceState: string(make([]byte, 4096))})
		if r := e.result(t); r.Status != protocol.ResultSucceeded {
			t.Fatalf("with traceparent %.20q: result %+v", bad, r)
		}
	}
	testwait.Until(t, 0, "three invocation spans", func() bool {
		n := 0
		for _, s := range rec.Ended() {
			if s.Name() == "invoke t.trace" {
				n++
				if s.Parent().IsValid() {
					t.Fatalf("a span under a bad header's parent %s", s.Parent().SpanID())
				}
			}
		}
		return n == 3
	})
}
