package hostloop

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/workflow"
)

// lastStates records the last state the loop reported for each session
// and operation.
type lastStates struct {
	mu       sync.Mutex
	sessions map[SessionID]SessionStatus
	ops      map[host.ExternalToolID]host.OperationState
}

func newLastStates() *lastStates {
	return &lastStates{sessions: map[SessionID]SessionStatus{}, ops: map[host.ExternalToolID]host.OperationState{}}
}

func (o *lastStates) SessionChanged(s SessionStatus) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.sessions[s.ID] = s
}

func (o *lastStates) OperationChanged(_ SessionID, op OperationStatus) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.ops[op.ID] = op.State
}

func (*lastStates) Chunk(SessionID, host.ExternalToolStreamChunk) {}
func (*lastStates) Audit(SessionID, []host.AuditEvent)            {}
func (*lastStates) Dispatched(SessionID, host.ExternalInvocation) {}
func (*lastStates) Rejected(string, error)                        {}

// A durable submission is its caller's once its ledger is first stored.
// A caller that leaves while that write stalls (a server failing over)
// was told an error, so the session is withdrawn: nothing it started is
// dispatched, it ends failed with ErrSubmissionWithdrawn, and its ledger
// goes. A write stored before the caller leaves answers it as usual.
func TestDurableSubmitWithdrawnWhenItsCallerLeaves(t *testing.T) {
	for _, tc := range []struct {
		name        string
		leavesFirst bool
	}{
		{"caller leaves before the write is stored", true},
		{"write stored before the caller leaves", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tr, a, log, obs := newChanTransport(), newMemArchive(), &dyingLog{Log: workflow.NewMemoryLog()}, newLastStates()
				l, err := StartLoop(LoopConfig{Transport: tr, HostID: "h1", Archive: a, Ledger: log, Catalog: remoteCatalog(t), Observer: obs})
				if err != nil {
					t.Fatal(err)
				}
				defer l.Stop()
				got, err := submitLeaving(l, log, `await tool.start("text.remote", "a"); await tool.start("text.remote", "b")`, tc.leavesFirst)
				if !tc.leavesFirst {
					if err != nil || got.State != SessionSuspended {
						t.Fatalf("Submit = %+v, %v; want the suspended session", got, err)
					}
					inv := next(t, tr)
					tr.Succeed(inv, "A")
					tr.Succeed(next(t, tr), "B")
					waitState(t, l, got.ID, SessionCompleted)
					return
				}
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("Submit = %+v, %v; want context.Canceled", got, err)
				}
				if p := tr.Published(); len(p) != 0 {
					t.Fatalf("a withdrawn session dispatched %+v", p)
				}
				obs.mu.Lock()
				defer obs.mu.Unlock()
				if len(obs.sessions) != 1 {
					t.Fatalf("sessions reported: %+v", obs.sessions)
				}
				for id, s := range obs.sessions {
					if s.State != SessionFailed || !errors.Is(s.Err, ErrSubmissionWithdrawn) {
						t.Fatalf("session %s reported %s (%v), want failed with ErrSubmissionWithdrawn", id, s.State, s.Err)
					}
					if rec, ok := a.records[id]; !ok || !errors.Is(rec.Err, ErrSubmissionWithdrawn) {
						t.Fatalf("archived %+v (%v), want the withdrawal", rec, ok)
					}
				}
				for op, state := range obs.ops {
					if state != host.Cancelled {
						t.Fatalf("operation %s reported %s, want cancelled", op, state)
					}
				}
				if left, _ := log.Sessions(context.Background()); len(left) != 0 {
					t.Fatalf("ledgers left: %v", left)
				}
			})
		})
	}
}

// A submission without a ledger is answered in the step that takes it:
// a caller that left before that step is not taken at all, and one that
// the step answered first gets its session even if it leaves right after.
func TestSubmitTakenOnlyIfItsCallerWaits(t *testing.T) {
	for _, tc := range []struct {
		name       string
		callerLeft bool
	}{
		{"caller left before the loop took it", true},
		{"loop took it before the caller left", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tr, obs := newChanTransport(), newLastStates()
				l, err := StartLoop(LoopConfig{Transport: tr, HostID: "h1", Catalog: remoteCatalog(t), Observer: obs})
				if err != nil {
					t.Fatal(err)
				}
				defer l.Stop()
				n, err := prepareSession(l.cfg, Submission{Source: `await tool.start("text.remote", "a")`})
				if err != nil {
					t.Fatal(err)
				}
				w := &submitWait{reply: make(chan submitAnswer, 1)}
				gone, cancel := context.WithCancel(context.Background())
				cancel()
				take := func() {
					if err := l.send(context.Background(), cmdFunc(func(st *loopState) { st.take(n, w) })); err != nil {
						t.Fatal(err)
					}
					synctest.Wait()
				}
				if !tc.callerLeft {
					take()
				}
				s, err := w.wait(gone, l.done)
				if tc.callerLeft {
					take()
				}
				obs.mu.Lock()
				defer obs.mu.Unlock()
				if tc.callerLeft {
					if !errors.Is(err, context.Canceled) || len(tr.Published()) != 0 || len(obs.sessions) != 0 {
						t.Fatalf("Submit = %v; %d published, sessions %+v; want context.Canceled and nothing taken", err, len(tr.Published()), obs.sessions)
					}
					return
				}
				if err != nil || s.State != SessionSuspended || len(tr.Published()) != 1 {
					t.Fatalf("Submit = %+v, %v; %d published; want the session, answered", s, err, len(tr.Published()))
				}
			})
		})
	}
}

// A durable submission whose first write went unanswered, and whose
// caller then left, is withdrawn when the host stops, not stored for the
// next process: had that write landed, the next process would resume a
// session whose caller was told an error. Whether it landed or not, no
// ledger is left and the next process dispatches nothing.
func TestDurableSubmitWithdrawnAtStopAfterAnUnansweredWrite(t *testing.T) {
	for _, landed := range []bool{true, false} {
		t.Run(fmt.Sprintf("write landed %v", landed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tr, a, log := newChanTransport(), newMemArchive(), &dyingLog{Log: workflow.NewMemoryLog()}
				var once atomic.Bool
				log.losing = func() (bool, bool) { return once.CompareAndSwap(false, true), landed }
				cfg := LoopConfig{Transport: tr, HostID: "h1", Archive: a, Ledger: log, Catalog: remoteCatalog(t)}
				l, err := StartLoop(cfg)
				if err != nil {
					t.Fatal(err)
				}
				_, err = submitLeaving(l, log, `await tool.start("text.remote", "a")`, false)
				if !errors.Is(err, context.Canceled) || log.lost.Load() != 1 {
					t.Fatalf("Submit = %v with %d answers lost; want context.Canceled after one", err, log.lost.Load())
				}
				l.Stop()
				synctest.Wait()
				if left, _ := log.Sessions(context.Background()); len(left) != 0 {
					t.Fatalf("ledgers left: %v", left)
				}
				next, err := StartLoop(cfg)
				if err != nil {
					t.Fatal(err)
				}
				synctest.Wait()
				next.Stop()
				if p := tr.Published(); len(p) != 0 {
					t.Fatalf("a withdrawn session dispatched %+v", p)
				}
			})
		})
	}
}
