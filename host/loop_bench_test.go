package host

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/protocol"
)

// echoTransport answers every invocation at once, as an infinitely fast
// pool would, so a benchmark measures the loop alone.
type echoTransport struct {
	events chan Event
	pub    chan protocol.Invoke
	done   chan struct{}
}

func startEchoTransport(b *testing.B) *echoTransport {
	tr := &echoTransport{events: make(chan Event, 1<<16), pub: make(chan protocol.Invoke, 1<<16), done: make(chan struct{})}
	go func() {
		for {
			select {
			case inv := <-tr.pub:
				p := protocol.TextPayload("ok")
				tr.events <- Event{Kind: EventMessage, Worker: "w", Message: protocol.ResultMessage(protocol.Result{
					RequestID: inv.RequestID, Attempt: inv.Attempt, Status: protocol.ResultSucceeded, Payload: &p})}
			case <-tr.done:
				return
			}
		}
	}()
	b.Cleanup(func() { close(tr.done) })
	return tr
}

func (tr *echoTransport) Publish(_ context.Context, inv protocol.Invoke) error {
	tr.pub <- inv
	return nil
}
func (tr *echoTransport) Cancel(context.Context, protocol.Cancel) error { return nil }
func (tr *echoTransport) Events() <-chan Event                          { return tr.events }

// endObserver takes every notification, keeping nothing but the ends of
// sessions, so the cost of building them is in the measurement.
type endObserver struct{ ended chan SessionStatus }

func (o endObserver) SessionChanged(s SessionStatus) {
	if s.State != SessionSuspended {
		o.ended <- s
	}
}
func (endObserver) OperationChanged(SessionID, OperationStatus) {}
func (endObserver) Chunk(SessionID, ExternalToolStreamChunk)    {}
func (endObserver) Audit(SessionID, []AuditEvent)               {}
func (endObserver) Dispatched(SessionID, ExternalInvocation)    {}
func (endObserver) Rejected(string, error)                      {}

// BenchmarkLoopManyCalls is one script awaiting n calls at once, for
// growing n: the loop's work per call must not grow with the calls still
// live. ns/call is the figure to compare across rows.
//
//	go test -run '^$' -bench LoopManyCalls -benchtime 3x ./host/
func BenchmarkLoopManyCalls(b *testing.B) {
	for _, n := range []int{100, 1_000, 10_000, 50_000} {
		b.Run(fmt.Sprintf("calls=%d", n), func(b *testing.B) {
			tr := startEchoTransport(b)
			obs := endObserver{ended: make(chan SessionStatus, 1)}
			l, err := StartLoop(LoopConfig{
				Transport: tr, HostID: "h1", Observer: obs,
				Limits:  Limits{MaxToolCallBudget: n, MaxPending: n},
				Catalog: func(rt *Runtime) error { return rt.RegisterExternalTool(NewToolPolicy("t")) },
			})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Stop()
			src := fmt.Sprintf(`await Promise.all(Array.from({length: %d}, () => tool.start("t", "x"))); return "done"`, n)
			start := time.Now()
			for b.Loop() {
				if _, err := l.Submit(context.Background(), Submission{Source: src, ToolCallBudget: n, MaxPending: n,
					ExecutionBudget: time.Minute}); err != nil {
					b.Fatal(err)
				}
				if st := <-obs.ended; st.State != SessionCompleted {
					b.Fatalf("session %s: %s", st.State, st.Error)
				}
			}
			b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(b.N*n), "ns/call")
		})
	}
}
