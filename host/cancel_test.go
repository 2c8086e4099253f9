package host

import (
	"testing"

	"github.com/splashfabric/splashfabric/toolspec"
)

func claimedOp(t *testing.T) (*Runtime, *Promise, ExternalInvocation) {
	t.Helper()
	r, _ := newTestRuntime(t, Config{})
	register(t, r, toolspec.Spec{Name: "text.remote", MaxAttempts: 3, Stream: &toolspec.StreamPolicy{MaxChunks: 4, MaxChunkBytes: 16, MaxSourceBytes: 64, MaxReleasedBytes: 64}})
	p := start(t, r, "text.remote", "secret input")
	return r, p, claim(t, r)
}

func TestCancellationRequestIsIdempotentAndKeepsPromisePending(t *testing.T) {
	r, p, inv := claimedOp(t)
	req, err := r.RequestExternalToolCancellation(inv.ID)
	must(t, err)
	want := ExternalToolCancellationRequest{ID: inv.ID, Tool: "text.remote", CallIndex: 1, Attempt: 1, IdempotencyKey: inv.IdempotencyKey}
	if req != want {
		t.Fatalf("request %+v", req)
	}
	before := snapshot(r)
	again, err := r.RequestExternalToolCancellation(inv.ID)
	must(t, err)
	if again != req || snapshot(r) != before {
		t.Fatal("repeated request changed something")
	}
	pendingPromise(t, p)
	wantState(t, r, inv.ID, CancellationRequested)
	wantOutcomes(t, r, inv.ID, "started", "claimed", "cancellation_requested")
}

func TestCancellationRequestedRefusesRetriesAndChunks(t *testing.T) {
	r, _, inv := claimedOp(t)
	_, err := r.RequestExternalToolCancellation(inv.ID)
	must(t, err)
	before := snapshot(r)
	_, err = r.RetryExternalTool(inv.ID, RetryTransient)
	wantErr(t, err, ErrCancellationRequested)
	_, err = r.PushExternalToolChunk(inv.ID, "x")
	wantErr(t, err, ErrCancellationRequested)
	if snapshot(r) != before {
		t.Fatal("refusals changed state")
	}
}

func TestResultWinsCancellationRace(t *testing.T) {
	for _, res := range []ToolResult{Ok("done"), Fail("broke")} {
		r, p, inv := claimedOp(t)
		_, err := r.RequestExternalToolCancellation(inv.ID)
		must(t, err)
		_, err = r.CompleteExternalTool(inv.ID, res)
		must(t, err)
		s := settled(t, p)
		if res.Err == nil && s.Output != "done" || res.Err != nil && s.Err == nil {
			t.Fatalf("settlement %+v", s)
		}
		_, err = r.ConfirmExternalToolCancellation(inv.ID)
		wantErr(t, err, ErrWrongState)
	}
}

func TestConfirmWithoutRequestRefused(t *testing.T) {
	r, p, inv := claimedOp(t)
	before := snapshot(r)
	_, err := r.ConfirmExternalToolCancellation(inv.ID)
	wantErr(t, err, ErrCancellationNotRequested)
	if snapshot(r) != before {
		t.Fatal("refused confirm changed state")
	}
	pendingPromise(t, p)
}

func TestResultAfterConfirmRefused(t *testing.T) {
	r, p, inv := claimedOp(t)
	_, err := r.RequestExternalToolCancellation(inv.ID)
	must(t, err)
	_, err = r.ConfirmExternalToolCancellation(inv.ID)
	must(t, err)
	wantErr(t, settled(t, p).Err, ToolCancelled)
	before := snapshot(r)
	_, err = r.CompleteExternalTool(inv.ID, Ok("late"))
	wantErr(t, err, ErrWrongState)
	if snapshot(r) != before {
		t.Fatal("late result changed state")
	}
	wantOutcomes(t, r, inv.ID, "started", "claimed", "cancellation_requested", "cancelled")
	for _, e := range r.Audit() {
		if e.Detail == "secret input" {
			t.Fatal("audit holds input")
		}
	}
}

func TestCancelExternalToolIsDirectTerminal(t *testing.T) {
	r, p, inv := claimedOp(t)
	_, err := r.CancelExternalTool(inv.ID)
	must(t, err)
	wantErr(t, settled(t, p).Err, ToolCancelled)
	wantOutcomes(t, r, inv.ID, "started", "claimed", "cancelled")

	// A queued operation is removed from the claim queue, never dispatched.
	q := start(t, r, "text.remote", "y")
	_, err = r.CancelExternalTool(q.ID())
	must(t, err)
	if _, ok := r.ClaimNextExternalTool(); ok {
		t.Fatal("cancelled op claimed")
	}
	wantState(t, r, q.ID(), Cancelled)
	if r.Pending() != 0 {
		t.Fatalf("pending %d", r.Pending())
	}
}
