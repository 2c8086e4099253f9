package hostloop

import (
	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/toolspec"

	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/internal/tooltest"
	"github.com/splashfabric/splashfabric/protocol"
)

// newChanTransport is the in-memory transport every loop test uses.
func newChanTransport() *MemTransport { return NewMemTransport(1024) }

// next waits for the loop's next invocation.
func next(t testing.TB, tr *MemTransport) protocol.Invoke {
	t.Helper()
	return testwait.Receive(t, 0, "a published invocation", tr.Invocations())
}

func startTestLoop(t *testing.T, tr Transport, catalog func(*host.Runtime) error) *Loop {
	t.Helper()
	l, err := StartLoop(LoopConfig{
		Transport:    tr,
		HostID:       "h1",
		Catalog:      catalog,
		RetryInitial: 5 * time.Millisecond,
		RetryMax:     50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Stop)
	return l
}

func waitState(t *testing.T, l *Loop, id SessionID, want SessionState) SessionStatus {
	t.Helper()
	var s SessionStatus
	testwait.Until(t, 0, "session "+string(id)+" to reach "+string(want), func() bool {
		var err error
		s, _, err = l.Status(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		return s.State == want
	})
	return s
}

func TestLoopRunsScriptAcrossTransport(t *testing.T) {
	tr := newChanTransport()
	l := startTestLoop(t, tr, tooltest.Catalog[*host.Runtime](t, toolspec.Spec{Name: "text.remote"}))
	s, err := l.Submit(context.Background(), Submission{Source: `let output = await tool.start("text.remote", "release"); assert(output == "done")`})
	if err != nil {
		t.Fatal(err)
	}
	if s.State != SessionSuspended {
		t.Fatalf("state %s", s.State)
	}
	inv := next(t, tr)
	if inv.Tool != "text.remote" || inv.Input.Text != "release" || inv.Attempt != 1 || inv.IdempotencyKey == "" {
		t.Fatalf("invoke %+v", inv)
	}
	p := protocol.TextPayload("done")
	tr.Reply(protocol.Result{RequestID: inv.RequestID, Attempt: 1, Status: protocol.ResultSucceeded, Payload: &p})
	waitState(t, l, s.ID, SessionCompleted)
}

func TestLoopRetriesWithBackoffAndSameKey(t *testing.T) {
	tr := newChanTransport()
	l := startTestLoop(t, tr, tooltest.Catalog[*host.Runtime](t, toolspec.Spec{Name: "flaky", MaxAttempts: 3}))
	s, err := l.Submit(context.Background(), Submission{Source: `await tool.start("flaky", "x")`})
	if err != nil {
		t.Fatal(err)
	}
	first := next(t, tr)
	tr.Reply(protocol.Result{RequestID: first.RequestID, Attempt: 1, Status: protocol.ResultRetryTransient, Error: "boom"})
	second := next(t, tr)
	if second.Attempt != 2 || second.IdempotencyKey != first.IdempotencyKey || second.RequestID != first.RequestID {
		t.Fatalf("second %+v first %+v", second, first)
	}
	start := time.Now()
	tr.Reply(protocol.Result{RequestID: first.RequestID, Attempt: 2, Status: protocol.ResultRetryRateLimited, RetryAfterMillis: 200, Error: "slow down"})
	third := next(t, tr)
	if waited := time.Since(start); waited < 200*time.Millisecond {
		t.Fatalf("rate-limited retry after %v, want >= 200ms", waited)
	}
	if third.Attempt != 3 {
		t.Fatalf("third %+v", third)
	}
	tr.Reply(protocol.Result{RequestID: first.RequestID, Attempt: 3, Status: protocol.ResultRetryTransient, Error: "still"})
	st := waitState(t, l, s.ID, SessionFailed)
	if st.Error == "" {
		t.Fatal("no error")
	}
}

func TestLoopRejectsStaleAttemptAndUnknownRequest(t *testing.T) {
	tr := newChanTransport()
	rej := &recordingObserver{}
	l, err := StartLoop(LoopConfig{Transport: tr, HostID: "h1", Observer: rej, RetryInitial: time.Millisecond,
		Catalog: tooltest.Catalog[*host.Runtime](t, toolspec.Spec{Name: "t", MaxAttempts: 2})})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Stop()
	s, err := l.Submit(context.Background(), Submission{Source: `await tool.start("t", "x")`})
	if err != nil {
		t.Fatal(err)
	}
	inv := next(t, tr)
	p := protocol.TextPayload("late")
	tr.Reply(protocol.Result{RequestID: "nope", Attempt: 1, Status: protocol.ResultSucceeded, Payload: &p})
	tr.Reply(protocol.Result{RequestID: inv.RequestID, Attempt: 7, Status: protocol.ResultSucceeded, Payload: &p})
	testwait.Until(t, 0, "two rejections", func() bool { return rej.count() >= 2 })
	st, _, _ := l.Status(context.Background(), s.ID)
	if st.State != SessionSuspended {
		t.Fatalf("state %s", st.State)
	}
}

func TestLoopCommandsAfterStop(t *testing.T) {
	tr := newChanTransport()
	l, err := StartLoop(LoopConfig{Transport: tr, HostID: "h1"})
	if err != nil {
		t.Fatal(err)
	}
	l.Stop()
	l.Stop()
	if _, err := l.Submit(context.Background(), Submission{Source: "1"}); !errors.Is(err, ErrLoopStopped) {
		t.Fatalf("err %v", err)
	}
}

type recordingObserver struct {
	mu   sync.Mutex
	rejs []string
}

func (r *recordingObserver) SessionChanged(SessionStatus)                  {}
func (r *recordingObserver) OperationChanged(SessionID, OperationStatus)   {}
func (r *recordingObserver) Chunk(SessionID, host.ExternalToolStreamChunk) {}
func (r *recordingObserver) Audit(SessionID, []host.AuditEvent)            {}
func (r *recordingObserver) Dispatched(SessionID, host.ExternalInvocation) {}
func (r *recordingObserver) Rejected(reason string, _ error) {
	r.mu.Lock()
	r.rejs = append(r.rejs, reason)
	r.mu.Unlock()
}
func (r *recordingObserver) count() int { r.mu.Lock(); defer r.mu.Unlock(); return len(r.rejs) }

func TestLoopRecordsLateResultInAudit(t *testing.T) {
	tr := newChanTransport()
	l := startTestLoop(t, tr, tooltest.Catalog[*host.Runtime](t, toolspec.Spec{Name: "slow", Deadline: toolspec.Duration(50 * time.Millisecond)}))
	s, err := l.Submit(context.Background(), Submission{Source: `await tool.start("slow", "x")`})
	if err != nil {
		t.Fatal(err)
	}
	inv := next(t, tr)
	waitState(t, l, s.ID, SessionFailed)
	p := protocol.TextPayload("too late")
	tr.Reply(protocol.Result{RequestID: inv.RequestID, Attempt: 1, Status: protocol.ResultSucceeded, Payload: &p})
	testwait.Until(t, 0, "a late_result audit event", func() bool {
		_, audit, err := l.Status(context.Background(), s.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range audit {
			if ev.Outcome == host.AuditLateResult {
				return true
			}
		}
		return false
	})
	st, _, _ := l.Status(context.Background(), s.ID)
	if st.State != SessionFailed {
		t.Fatalf("late result changed the session: %s", st.State)
	}
}
