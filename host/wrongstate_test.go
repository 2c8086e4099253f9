package host

import (
	"errors"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/toolspec"
)

func TestWrongStateCallsChangeNothing(t *testing.T) {
	states := []struct {
		state OperationState
		reach func(t *testing.T, r *Runtime, c *ManualClock, id ExternalToolID)
	}{
		{Queued, func(*testing.T, *Runtime, *ManualClock, ExternalToolID) {}},
		{Claimed, func(t *testing.T, r *Runtime, _ *ManualClock, _ ExternalToolID) { claim(t, r) }},
		{CancellationRequested, func(t *testing.T, r *Runtime, _ *ManualClock, id ExternalToolID) {
			claim(t, r)
			_, err := r.RequestExternalToolCancellation(id)
			must(t, err)
		}},
		{Succeeded, func(t *testing.T, r *Runtime, _ *ManualClock, id ExternalToolID) {
			claim(t, r)
			_, err := r.CompleteExternalTool(id, Ok("done"))
			must(t, err)
		}},
		{Failed, func(t *testing.T, r *Runtime, _ *ManualClock, id ExternalToolID) {
			claim(t, r)
			_, err := r.CompleteExternalTool(id, Fail("no"))
			must(t, err)
		}},
		{TimedOut, func(t *testing.T, r *Runtime, c *ManualClock, _ ExternalToolID) {
			claim(t, r)
			c.Advance(time.Hour)
			r.ExpireTimedOutTools()
		}},
		{Cancelled, func(t *testing.T, r *Runtime, _ *ManualClock, id ExternalToolID) {
			claim(t, r)
			_, err := r.CancelExternalTool(id)
			must(t, err)
		}},
	}
	var key [protocol.AuthTagBytes]byte
	sk := protocol.SessionKeyFromArray(key)
	hostAuth := func(t *testing.T) *protocol.SessionAuthenticator {
		a, err := protocol.NewSessionAuthenticator("worker-1", sk, protocol.RoleHost)
		must(t, err)
		return a
	}
	// A well-formed answer from the worker end, so only the state refuses.
	answer := func(t *testing.T, key string) (protocol.OperationReconcileRequest, protocol.Frame) {
		w, err := protocol.NewSessionAuthenticator("worker-1", sk, protocol.RoleWorker)
		must(t, err)
		q := protocol.OperationReconcileRequest{SessionID: "worker-1", RequestID: "rq", Tool: "text.remote", OperationKey: key}
		res, err := protocol.NewOperationReconcileResult(q.SessionID, q.RequestID, q.Tool, q.OperationKey, protocol.StatusRunning())
		must(t, err)
		f, err := w.Seal(protocol.ReconciledMessage(res))
		must(t, err)
		return q, f
	}
	methods := []struct {
		name string
		call func(t *testing.T, r *Runtime, id ExternalToolID, key string) error
		// refused maps each state in which the method must be refused
		// to the reason; states absent from it allow the method.
		refused map[OperationState]error
	}{
		{"CompleteExternalTool", func(_ *testing.T, r *Runtime, id ExternalToolID, _ string) error {
			_, err := r.CompleteExternalTool(id, Ok("x"))
			return err
		}, map[OperationState]error{Queued: ErrNotClaimed}},
		{"RetryExternalTool", func(_ *testing.T, r *Runtime, id ExternalToolID, _ string) error {
			_, err := r.RetryExternalTool(id, RetryTransient)
			return err
		}, map[OperationState]error{Queued: ErrNotClaimed, CancellationRequested: ErrCancellationRequested}},
		{"RequestExternalToolCancellation", func(_ *testing.T, r *Runtime, id ExternalToolID, _ string) error {
			_, err := r.RequestExternalToolCancellation(id)
			return err
		}, map[OperationState]error{Queued: ErrNotClaimed}},
		{"ConfirmExternalToolCancellation", func(_ *testing.T, r *Runtime, id ExternalToolID, _ string) error {
			_, err := r.ConfirmExternalToolCancellation(id)
			return err
		}, map[OperationState]error{Queued: ErrCancellationNotRequested, Claimed: ErrCancellationNotRequested}},
		{"CancelExternalTool", func(_ *testing.T, r *Runtime, id ExternalToolID, _ string) error {
			_, err := r.CancelExternalTool(id)
			return err
		}, map[OperationState]error{}},
		{"PushExternalToolChunk", func(_ *testing.T, r *Runtime, id ExternalToolID, _ string) error {
			_, err := r.PushExternalToolChunk(id, "chunk")
			return err
		}, map[OperationState]error{Queued: ErrNotClaimed, CancellationRequested: ErrCancellationRequested}},
		{"PrepareAuthenticatedExternalReconciliation", func(t *testing.T, r *Runtime, id ExternalToolID, _ string) error {
			_, err := r.PrepareAuthenticatedExternalReconciliation(id, "rq", hostAuth(t))
			return err
		}, map[OperationState]error{Queued: ErrNotClaimed}},
		{"ReconcileAuthenticatedExternalTool", func(t *testing.T, r *Runtime, id ExternalToolID, key string) error {
			q, f := answer(t, key)
			_, err := r.ReconcileAuthenticatedExternalTool(id, q, hostAuth(t), f)
			return err
		}, map[OperationState]error{Queued: ErrNotClaimed}},
	}
	for _, terminal := range []OperationState{Succeeded, Failed, TimedOut, Cancelled} {
		for _, m := range methods {
			m.refused[terminal] = ErrWrongState
		}
	}
	for _, m := range methods {
		for _, st := range states {
			reason, refused := m.refused[st.state]
			if !refused {
				continue
			}
			t.Run(m.name+"/"+st.state.String(), func(t *testing.T) {
				r, clock := newTestRuntime(t, Config{})
				register(t, r, toolspec.Spec{Name: "text.remote", MaxAttempts: 2, Deadline: toolspec.Duration(time.Minute), Stream: &toolspec.StreamPolicy{MaxChunks: 4, MaxChunkBytes: 64, MaxSourceBytes: 64, MaxReleasedBytes: 64}})
				p := start(t, r, "text.remote", "x")
				info, _ := r.Operation(p.ID())
				st.reach(t, r, clock, p.ID())
				wantState(t, r, p.ID(), st.state)
				before := snapshot(r)
				err := m.call(t, r, p.ID(), info.IdempotencyKey)
				wantErr(t, err, reason)
				wantErr(t, err, ErrWrongState)
				var se *StateError
				if !errors.As(err, &se) || se.State != st.state || se.ID != p.ID() {
					t.Fatalf("error %v is not a StateError for %s", err, st.state)
				}
				if after := snapshot(r); after != before {
					t.Fatalf("state changed\nbefore:\n%s\nafter:\n%s", before, after)
				}
			})
		}
	}
}

func TestUnknownAndLocalOperationsRefused(t *testing.T) {
	r, _ := newTestRuntime(t, Config{})
	must(t, r.RegisterLocalTool(NewToolPolicy("text.local"), func(s string) (string, error) { return s, nil }))
	p := start(t, r, "text.local", "x")
	before := snapshot(r)
	_, err := r.CompleteExternalTool(p.ID(), Ok("x"))
	wantErr(t, err, ErrNotExternal)
	_, err = r.CancelExternalTool(ExternalToolID(99))
	wantErr(t, err, ErrUnknownOperation)
	if snapshot(r) != before {
		t.Fatal("refusal changed state")
	}
}

func TestEvictedFinishedOperationStillRefused(t *testing.T) {
	r, _ := newTestRuntime(t, Config{TerminalHistory: 1})
	register(t, r, toolspec.Spec{Name: "text.remote"})
	a := start(t, r, "text.remote", "a")
	_, err := r.CancelExternalTool(a.ID())
	must(t, err)
	b := start(t, r, "text.remote", "b")
	_, err = r.CancelExternalTool(b.ID())
	must(t, err)
	if _, ok := r.Operation(a.ID()); ok {
		t.Fatal("history not bounded")
	}
	_, err = r.CompleteExternalTool(a.ID(), Ok("late"))
	wantErr(t, err, ErrWrongState)
}

func TestAuditLogBounded(t *testing.T) {
	r, _ := newTestRuntime(t, Config{AuditLimit: 3})
	register(t, r, toolspec.Spec{Name: "text.remote"})
	p := start(t, r, "text.remote", "a")
	inv := claim(t, r)
	_, err := r.CompleteExternalTool(inv.ID, Ok("x"))
	must(t, err)
	start(t, r, "text.remote", "b")
	ev := r.Audit()
	if len(ev) != 3 || ev[0].Seq != 2 || ev[2].Seq != 4 || r.AuditDropped() != 1 {
		t.Fatalf("audit %+v dropped %d", ev, r.AuditDropped())
	}
	kept := []AuditEvent{{Seq: 1}}
	d := r.DrainAuditTo(kept)
	if len(d) != 4 || d[0].Seq != 1 || d[1].Seq != 2 || d[3].Seq != 4 || len(r.Audit()) != 0 {
		t.Fatalf("drain %+v, left %d", d, len(r.Audit()))
	}
	start(t, r, "text.remote", "c")
	if d := r.DrainAudit(); len(d) != 1 || d[0].Seq != 5 || len(r.Audit()) != 0 {
		t.Fatalf("drain after drain %+v", d)
	}
	_ = p
}

func TestLongLivedOperationsMoveOutOfTheWindow(t *testing.T) {
	r, _ := newTestRuntime(t, Config{})
	register(t, r, toolspec.Spec{Name: "text.remote"})
	old := start(t, r, "text.remote", "old")
	oldInv := claim(t, r)
	for i := range 500 {
		p := start(t, r, "text.remote", "x")
		inv := claim(t, r)
		_, err := r.CompleteExternalTool(inv.ID, Ok("done"))
		must(t, err)
		if _, ok := p.Settled(); !ok || i < 0 {
			t.Fatal("not settled")
		}
	}
	if len(r.ops.win)-r.ops.head > 2*r.ops.inWin+64 || len(r.ops.stragglers) != 1 {
		t.Fatalf("window %d..%d, stragglers %d", r.ops.head, len(r.ops.win), len(r.ops.stragglers))
	}
	wantState(t, r, oldInv.ID, Claimed)
	_, err := r.CompleteExternalTool(oldInv.ID, Ok("late but fine"))
	must(t, err)
	if settled(t, old).Output != "late but fine" || r.ops.len() != 0 {
		t.Fatal("straggler not resolved")
	}
}
