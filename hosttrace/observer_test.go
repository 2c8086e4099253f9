package hosttrace_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/hostloop"
	"github.com/splashfabric/splashfabric/hosttrace"
	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/internal/tooltest"
	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/toolspec"
	"github.com/splashfabric/splashfabric/tracing"
	"github.com/splashfabric/splashfabric/workflow"
)

// ctxTransport is the in-memory transport that also keeps the span context
// the loop handed each publish, as hostnats writes it into the headers.
type ctxTransport struct {
	*hostloop.MemTransport
	mu      sync.Mutex
	parents map[string]trace.SpanContext // request/attempt -> span context
}

func newCtxTransport() *ctxTransport {
	return &ctxTransport{MemTransport: hostloop.NewMemTransport(64), parents: make(map[string]trace.SpanContext)}
}

func (t *ctxTransport) Publish(ctx context.Context, inv protocol.Invoke) error {
	t.mu.Lock()
	t.parents[fmt.Sprintf("%s/%d", inv.RequestID, inv.Attempt)] = trace.SpanContextFromContext(ctx)
	t.mu.Unlock()
	return t.MemTransport.Publish(ctx, inv)
}

func (t *ctxTransport) parent(inv protocol.Invoke) trace.SpanContext {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.parents[fmt.Sprintf("%s/%d", inv.RequestID, inv.Attempt)]
}

func provider(t *testing.T) (*sdktrace.TracerProvider, *tracetest.SpanRecorder) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithIDGenerator(tracing.NewIDGenerator()))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp, rec
}

// catalog registers t.stream, streaming with two attempts, in every
// session.
func catalog(tb testing.TB) func(*host.Runtime) error {
	return tooltest.Catalog[*host.Runtime](tb, toolspec.Spec{Name: "t.stream", MaxAttempts: 2,
		Stream: &toolspec.StreamPolicy{MaxChunks: 8, MaxChunkBytes: 1024, MaxSourceBytes: 8192, MaxReleasedBytes: 8192}})
}

// submitted starts a span standing for the API's submission and returns
// it with its traceparent.
func submitted(tp trace.TracerProvider) (trace.Span, string) {
	_, span := tp.Tracer("test").Start(context.Background(), "POST /v1/sessions")
	return span, tracing.TraceParent(span.SpanContext())
}

func spansNamed(rec *tracetest.SpanRecorder, prefix string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if strings.HasPrefix(s.Name(), prefix) {
			out = append(out, s)
		}
	}
	return out
}

func attr(s sdktrace.ReadOnlySpan, key string) string {
	for _, a := range s.Attributes() {
		if string(a.Key) == key {
			return a.Value.Emit()
		}
	}
	return ""
}

func events(s sdktrace.ReadOnlySpan, name string) []sdktrace.Event {
	var out []sdktrace.Event
	for _, e := range s.Events() {
		if e.Name == name {
			out = append(out, e)
		}
	}
	return out
}

// A call retried once, then streaming, then cancelled: one trace, the
// session under its submission, the operation under the session, both
// attempts and the backoff between them under the operation, the chunks
// and the cancellation as events, and each publish handed its attempt's
// span.
func TestSpanTreeOfRetriedStreamedCancelledCall(t *testing.T) {
	tp, rec := provider(t)
	tr := newCtxTransport()
	l, err := hostloop.StartLoop(hostloop.LoopConfig{
		Transport: tr, HostID: "h1", Catalog: catalog(t),
		RetryInitial: time.Millisecond, RetryMax: 5 * time.Millisecond,
		Observer: hosttrace.New(tp),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Stop()
	sub, parent := submitted(tp)
	ctx := context.Background()
	st, err := l.Submit(ctx, hostloop.Submission{Trace: parent, Source: `
		try { return await tool.start("t.stream", "in") } catch (e) { return "ended: " + e.message }`})
	if err != nil {
		t.Fatal(err)
	}
	sub.End()

	first := testwait.Receive(t, 0, "attempt 1", tr.Invocations())
	tr.Reply(protocol.Result{RequestID: first.RequestID, Attempt: 1, Status: protocol.ResultRetryTransient, Error: "busy"})
	second := testwait.Receive(t, 0, "attempt 2", tr.Invocations())
	for i := 1; i <= 2; i++ {
		tr.Message(protocol.ChunkMessage(protocol.Chunk{RequestID: second.RequestID, Sequence: uint64(i), Text: "secret chunk text"}))
	}
	testwait.Until(t, 0, "both chunks taken", func() bool {
		_, audit, _ := l.Status(ctx, st.ID)
		n := 0
		for _, e := range audit {
			if e.Outcome == host.AuditStreamed {
				n++
			}
		}
		return n == 2
	})
	if err := l.Cancel(ctx, st.ID, host.ExternalToolID(1)); err != nil {
		t.Fatal(err)
	}
	tr.Message(protocol.CancelReplyMessage(protocol.CancelReply{RequestID: second.RequestID, Attempt: 2, Disposition: protocol.CancelAcknowledged}))
	testwait.Until(t, 0, "the session span", func() bool { return len(spansNamed(rec, "session")) == 1 })

	traceID := sub.SpanContext().TraceID()
	for _, s := range rec.Ended() {
		if s.SpanContext().TraceID() != traceID {
			t.Errorf("span %q in trace %s, want the submission's %s", s.Name(), s.SpanContext().TraceID(), traceID)
		}
	}
	session := spansNamed(rec, "session")[0]
	if session.Parent().SpanID() != sub.SpanContext().SpanID() {
		t.Errorf("session's parent %s, want the submission %s", session.Parent().SpanID(), sub.SpanContext().SpanID())
	}
	if want := tracing.DerivedSpanID(traceID, "session/"+string(st.ID)); session.SpanContext().SpanID() != want {
		t.Errorf("session span id %s, want the derived %s", session.SpanContext().SpanID(), want)
	}
	if got := attr(session, "splash.session.state"); got != "completed" {
		t.Errorf("session state %q", got)
	}
	ops := spansNamed(rec, "operation t.stream")
	if len(ops) != 1 {
		t.Fatalf("%d operation spans", len(ops))
	}
	op := ops[0]
	if op.Parent().SpanID() != session.SpanContext().SpanID() || attr(op, "splash.outcome") != "cancelled" {
		t.Errorf("operation: parent %s, outcome %q", op.Parent().SpanID(), attr(op, "splash.outcome"))
	}
	if attr(op, "splash.request.id") != first.RequestID {
		t.Errorf("operation request %q, want %q", attr(op, "splash.request.id"), first.RequestID)
	}
	attempts := spansNamed(rec, "attempt t.stream")
	if len(attempts) != 2 {
		t.Fatalf("%d attempt spans", len(attempts))
	}
	byAttempt := map[string]sdktrace.ReadOnlySpan{}
	seen := map[trace.SpanID]string{}
	for _, s := range rec.Ended() {
		if other, dup := seen[s.SpanContext().SpanID()]; dup {
			t.Errorf("spans %q and %q share the id %s", other, s.Name(), s.SpanContext().SpanID())
		}
		seen[s.SpanContext().SpanID()] = s.Name()
	}
	for _, a := range attempts {
		if a.Parent().SpanID() != op.SpanContext().SpanID() || a.SpanKind() != trace.SpanKindProducer {
			t.Errorf("attempt %s: parent %s kind %s", attr(a, "splash.attempt"), a.Parent().SpanID(), a.SpanKind())
		}
		byAttempt[attr(a, "splash.attempt")] = a
	}
	if got := attr(byAttempt["1"], "splash.outcome"); got != "retry" {
		t.Errorf("attempt 1 outcome %q", got)
	}
	a2 := byAttempt["2"]
	if got := attr(a2, "splash.outcome"); got != "cancelled" {
		t.Errorf("attempt 2 outcome %q", got)
	}
	if n := len(events(a2, "chunk")); n != 2 {
		t.Errorf("attempt 2 has %d chunk events", n)
	}
	if len(events(a2, "cancellation requested")) != 1 || len(events(op, "cancellation requested")) != 1 {
		t.Error("the cancellation request is not an event of the operation and its attempt")
	}
	if attr(a2, "splash.worker.id") != "w1" {
		t.Errorf("attempt 2's worker %q", attr(a2, "splash.worker.id"))
	}
	backoff := spansNamed(rec, "retry backoff")
	if len(backoff) != 1 || backoff[0].Parent().SpanID() != op.SpanContext().SpanID() {
		t.Fatalf("backoff spans: %d", len(backoff))
	}
	if b, a := backoff[0].EndTime(), a2.StartTime(); b.After(a) {
		t.Errorf("the backoff ends at %v, after attempt 2 began at %v", b, a)
	}
	// Each publish carried its own attempt's span to the worker.
	for _, inv := range []protocol.Invoke{first, second} {
		got := tr.parent(inv)
		want := byAttempt[fmt.Sprint(inv.Attempt)].SpanContext()
		if got.SpanID() != want.SpanID() || got.TraceID() != want.TraceID() || !got.IsSampled() {
			t.Errorf("attempt %d published with %v, want its span %v", inv.Attempt, got, want)
		}
	}
	// No text of the call's input, chunks or errors on any span.
	for _, s := range rec.Ended() {
		for _, a := range s.Attributes() {
			if v := a.Value.Emit(); strings.Contains(v, "secret") || strings.Contains(v, "busy") {
				t.Errorf("span %q carries %s=%q", s.Name(), a.Key, v)
			}
		}
		for _, e := range s.Events() {
			for _, a := range e.Attributes {
				if v := a.Value.Emit(); strings.Contains(v, "secret") || strings.Contains(v, "busy") {
					t.Errorf("event %q of %q carries %s=%q", e.Name, s.Name(), a.Key, v)
				}
			}
		}
	}
}

// A durable session resumed by a host's next process keeps its trace and
// the ids of its session's and operation's spans, which the first process
// never ended.
func TestResumedSessionKeepsItsSpans(t *testing.T) {
	ledger := workflow.NewMemoryLog()
	tp1, rec1 := provider(t)
	tr1 := newCtxTransport()
	cfg := hostloop.LoopConfig{
		Transport: tr1, HostID: "h1", Catalog: catalog(t), Ledger: ledger,
		Observer: hosttrace.New(tp1),
	}
	l1, err := hostloop.StartLoop(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sub, parent := submitted(tp1)
	st, err := l1.Submit(context.Background(), hostloop.Submission{Trace: parent, Source: `return await tool.start("t.stream", "in")`})
	if err != nil {
		t.Fatal(err)
	}
	sub.End()
	first := testwait.Receive(t, 0, "attempt 1", tr1.Invocations())
	firstParent := tr1.parent(first)
	l1.Stop() // as a killed host: its open spans never end
	if n := len(rec1.Ended()); n != 1 {
		t.Fatalf("the first process ended %d spans, want only the submission", n)
	}

	tp2, rec2 := provider(t)
	tr2 := newCtxTransport()
	cfg.Transport, cfg.Observer = tr2, hosttrace.New(tp2)
	l2, err := hostloop.StartLoop(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Stop()
	again := testwait.Receive(t, 0, "the resumed attempt", tr2.Invocations())
	if again.RequestID != first.RequestID || again.Attempt != 1 {
		t.Fatalf("resumed %s/%d, want %s/1", again.RequestID, again.Attempt, first.RequestID)
	}
	if got := tr2.parent(again); got.TraceID() != firstParent.TraceID() {
		t.Errorf("the resumed attempt is in trace %s, want %s", got.TraceID(), firstParent.TraceID())
	}
	tr2.Succeed(again, "OUT")
	testwait.Until(t, 0, "the session span", func() bool { return len(spansNamed(rec2, "session")) == 1 })
	traceID := sub.SpanContext().TraceID()
	session := spansNamed(rec2, "session")[0]
	if session.SpanContext().TraceID() != traceID || session.Parent().SpanID() != sub.SpanContext().SpanID() {
		t.Errorf("resumed session span in %s under %s", session.SpanContext().TraceID(), session.Parent().SpanID())
	}
	if want := tracing.DerivedSpanID(traceID, "session/"+string(st.ID)); session.SpanContext().SpanID() != want {
		t.Errorf("resumed session span id %s, want %s", session.SpanContext().SpanID(), want)
	}
	if attr(session, "splash.session.resumed") != "true" || !session.StartTime().Equal(st.Created) {
		t.Errorf("resumed session: resumed=%q start %v, want %v", attr(session, "splash.session.resumed"), session.StartTime(), st.Created)
	}
	ops := spansNamed(rec2, "operation t.stream")
	if len(ops) != 1 {
		t.Fatalf("%d operation spans", len(ops))
	}
	// The first process's attempt pointed at this operation span: it is
	// the same one, made again.
	var firstOp trace.SpanID
	for _, s := range rec1.Started() {
		if s.Name() == "attempt t.stream" {
			firstOp = s.Parent().SpanID()
		}
	}
	if !firstOp.IsValid() || ops[0].SpanContext().SpanID() != firstOp {
		t.Errorf("resumed operation span %s is not the first process's %s", ops[0].SpanContext().SpanID(), firstOp)
	}
	if attr(ops[0], "splash.outcome") != "succeeded" {
		t.Errorf("operation outcome %q", attr(ops[0], "splash.outcome"))
	}
}
