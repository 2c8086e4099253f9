package hostloop

import (
	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/internal/tooltest"
	"github.com/splashfabric/splashfabric/toolspec"

	"context"
	"fmt"
	"testing"
	"time"
)

// startEcho answers every invocation of tr at once, as an infinitely fast
// pool would, so a benchmark measures the loop alone.
func startEcho(b *testing.B, tr *MemTransport) {
	done := make(chan struct{})
	go func() {
		for {
			select {
			case inv := <-tr.Invocations():
				tr.Succeed(inv, "ok")
			case <-done:
				return
			}
		}
	}()
	b.Cleanup(func() { close(done) })
}

// endObserver takes every notification, keeping nothing but the ends of
// sessions, so the cost of building them is in the measurement.
type endObserver struct{ ended chan SessionStatus }

func (o endObserver) SessionChanged(s SessionStatus) {
	if s.State != SessionSuspended {
		o.ended <- s
	}
}
func (endObserver) OperationChanged(SessionID, OperationStatus)   {}
func (endObserver) Chunk(SessionID, host.ExternalToolStreamChunk) {}
func (endObserver) Audit(SessionID, []host.AuditEvent)            {}
func (endObserver) Dispatched(SessionID, host.ExternalInvocation) {}
func (endObserver) Rejected(string, error)                        {}

// BenchmarkLoopManyCalls is one script awaiting n calls at once, for
// growing n: the loop's work per call must not grow with the calls still
// live. ns/call is the figure to compare across rows.
//
//	go test -run '^$' -bench LoopManyCalls -benchtime 3x ./host/
func BenchmarkLoopManyCalls(b *testing.B) {
	for _, n := range []int{100, 1_000, 10_000, 50_000} {
		b.Run(fmt.Sprintf("calls=%d", n), func(b *testing.B) {
			tr := NewMemTransport(1 << 16)
			startEcho(b, tr)
			obs := endObserver{ended: make(chan SessionStatus, 1)}
			l, err := StartLoop(LoopConfig{
				Transport: tr, HostID: "h1", Observer: obs,
				Limits:  Limits{MaxToolCallBudget: n, MaxPending: n},
				Catalog: tooltest.Catalog[*host.Runtime](b, toolspec.Spec{Name: "t"}),
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
