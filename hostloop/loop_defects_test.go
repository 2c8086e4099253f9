package hostloop

import (
	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/toolspec"

	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/internal/tooltest"
	"github.com/splashfabric/splashfabric/protocol"
)

// Each test here pins a defect of the loop: it failed before the fix.

func submitID(t *testing.T, l *Loop, src string) SessionID {
	t.Helper()
	s, err := l.Submit(context.Background(), Submission{Source: src})
	if err != nil {
		t.Fatal(err)
	}
	return s.ID
}

func opOf(t *testing.T, l *Loop, id SessionID) host.ExternalToolID {
	t.Helper()
	s, _, err := l.Status(context.Background(), id)
	if err != nil || len(s.Operations) != 1 {
		t.Fatalf("status %+v, %v", s, err)
	}
	return s.Operations[0].ID
}

// A retryable answer to an attempt whose cancellation was requested ends
// the operation cancelled: the attempt stopped without a result, which is
// what the host asked for. Before, the refused retry left the operation
// cancellation_requested with its session suspended, forever.
func TestLoopRetryableAnswerDuringCancellationEndsCancelled(t *testing.T) {
	tr := newChanTransport()
	l := startTestLoop(t, tr, tooltest.Catalog[*host.Runtime](t, toolspec.Spec{Name: "t", MaxAttempts: 3}))
	id := submitID(t, l, `await tool.start("t", "x")`)
	inv := next(t, tr)
	if err := l.Cancel(context.Background(), id, opOf(t, l, id)); err != nil {
		t.Fatal(err)
	}
	tr.Reply(protocol.Result{RequestID: inv.RequestID, Attempt: 1, Status: protocol.ResultRetryTransient, Error: "context canceled"})
	s := waitState(t, l, id, SessionFailed)
	if !strings.Contains(s.Error, "cancel") {
		t.Fatalf("session error %q, want the cancellation", s.Error)
	}
}

// A retry scheduled before a cancellation request is not published after
// it: no worker holds the operation, so the cancellation is certain and
// is confirmed at once. In a synctest bubble, so that waiting out the
// retry's time costs nothing and proves the absence.
func TestLoopDoesNotPublishRetryAfterCancellation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := newChanTransport()
		l := startTestLoop(t, tr, tooltest.Catalog[*host.Runtime](t, toolspec.Spec{Name: "t", MaxAttempts: 3}))
		id := submitID(t, l, `await tool.start("t", "x")`)
		inv := <-tr.Invocations()
		tr.Reply(protocol.Result{RequestID: inv.RequestID, Attempt: 1, Status: protocol.ResultRetryRateLimited, RetryAfterMillis: 300, Error: "slow down"})
		synctest.Wait() // the loop has scheduled attempt 2
		if err := l.Cancel(context.Background(), id, opOf(t, l, id)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second) // past the retry's time
		synctest.Wait()
		n := len(tr.Published())
		if n != 1 {
			t.Fatalf("%d invocations published, want only the first", n)
		}
		s, _, err := l.Status(context.Background(), id)
		if err != nil || s.State != SessionFailed || !strings.Contains(s.Error, "cancel") {
			t.Fatalf("session %s %q (%v), want failed by its cancellation", s.State, s.Error, err)
		}
	})
}

// A retried attempt carries the deadline that remains when it is
// published, not what remained when the retry was scheduled.
func TestLoopRetryCarriesDeadlineLeftAtPublish(t *testing.T) {
	tr := newChanTransport()
	l := startTestLoop(t, tr, tooltest.Catalog[*host.Runtime](t, toolspec.Spec{Name: "t", MaxAttempts: 2, Deadline: toolspec.Duration(5 * time.Second)}))
	submitID(t, l, `await tool.start("t", "x")`)
	first := next(t, tr)
	tr.Reply(protocol.Result{RequestID: first.RequestID, Attempt: 1, Status: protocol.ResultRetryRateLimited, RetryAfterMillis: 500, Error: "slow down"})
	second := next(t, tr)
	if second.DeadlineMillis > first.DeadlineMillis-500 {
		t.Fatalf("attempt 2 has %d ms left, attempt 1 had %d and the retry waited 500", second.DeadlineMillis, first.DeadlineMillis)
	}
}

// A trusted nonce in the loop's runtime template would give every session
// the same idempotency keys; the loop refuses it.
func TestLoopRefusesSharedSessionNonce(t *testing.T) {
	var n host.CapabilitySessionNonce
	_, err := StartLoop(LoopConfig{Transport: newChanTransport(), HostID: "h1", Runtime: host.Config{SessionNonce: &n}})
	if !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("StartLoop: %v, want ErrInvalidConfig", err)
	}
}

// Host-pumped (local) tools run on the loop: a script awaiting one
// completes.
func TestLoopPumpsLocalTools(t *testing.T) {
	tr := newChanTransport()
	l := startTestLoop(t, tr, func(rt *host.Runtime) error {
		return rt.RegisterLocalTool(host.NewToolPolicy("local.upper"), func(in string) (string, error) {
			return strings.ToUpper(in), nil
		})
	})
	id := submitID(t, l, `let a = await tool.start("local.upper", "a"); let b = await tool.start("local.upper", a + "b"); return b`)
	s := waitState(t, l, id, SessionCompleted)
	if s.Value != "AB" {
		t.Fatalf("value %q", s.Value)
	}
}

// A JSON result that breaks its tool's contract is refused without its
// text reaching the audit log.
func TestLoopContractFailureKeepsOutputOutOfAudit(t *testing.T) {
	tr := newChanTransport()
	schema := json.RawMessage(`{"type":"object","properties":{"n":{"type":"string","pattern":"^x$"}}}`)
	l := startTestLoop(t, tr, tooltest.Catalog[*host.Runtime](t, toolspec.Spec{Name: "j", Format: toolspec.FormatJSON, OutputSchema: schema}))
	id := submitID(t, l, `await tool.start_json("j", {})`)
	inv := next(t, tr)
	p := protocol.JSONPayload(json.RawMessage(`{"n":"secret-value-42"}`))
	tr.Reply(protocol.Result{RequestID: inv.RequestID, Attempt: 1, Status: protocol.ResultSucceeded, Payload: &p})
	s := waitState(t, l, id, SessionFailed)
	_, audit, err := l.Status(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range audit {
		if strings.Contains(e.Detail, "secret-value-42") {
			t.Fatalf("audit event %+v quotes the output", e)
		}
	}
	if strings.Contains(s.Error, "secret-value-42") {
		t.Fatalf("session error %q quotes the output", s.Error)
	}
}

// A second cancel of the same operation is refused with
// ErrCancellationRequested (the API's 409) and sends nothing.
func TestLoopSecondCancelRefused(t *testing.T) {
	tr := newChanTransport()
	l := startTestLoop(t, tr, tooltest.Catalog[*host.Runtime](t, toolspec.Spec{Name: "t"}))
	id := submitID(t, l, `await tool.start("t", "x")`)
	next(t, tr)
	op := opOf(t, l, id)
	if err := l.Cancel(context.Background(), id, op); err != nil {
		t.Fatal(err)
	}
	if err := l.Cancel(context.Background(), id, op); !errors.Is(err, host.ErrCancellationRequested) {
		t.Fatalf("second cancel: %v, want ErrCancellationRequested", err)
	}
	n := len(tr.Cancels())
	if n != 1 {
		t.Fatalf("%d cancel frames sent, want 1", n)
	}
}

// inspect runs f on the loop goroutine, where the loop's state may be read.
func inspect[T any](t *testing.T, l *Loop, f func(st *loopState) T) T {
	t.Helper()
	v, err := call(context.Background(), l, func(reply chan<- T) command {
		return cmdFunc(func(st *loopState) { reply <- f(st) })
	})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// A finished session keeps its summary, not its script's VM.
func TestLoopFinishedSessionReleasesItsVM(t *testing.T) {
	tr := newChanTransport()
	l := startTestLoop(t, tr, tooltest.Catalog[*host.Runtime](t, toolspec.Spec{Name: "t"}))
	id := submitID(t, l, `return await tool.start("t", "x")`)
	inv := next(t, tr)
	if held := inspect(t, l, func(st *loopState) bool { return st.sessions[id].core.HoldsScript() }); !held {
		t.Fatal("a suspended session has no script engine")
	}
	p := protocol.TextPayload("done")
	tr.Reply(protocol.Result{RequestID: inv.RequestID, Attempt: 1, Status: protocol.ResultSucceeded, Payload: &p})
	if s := waitState(t, l, id, SessionCompleted); s.Value != "done" {
		t.Fatalf("value %q", s.Value)
	}
	if held := inspect(t, l, func(st *loopState) bool { return st.sessions[id].core.HoldsScript() }); held {
		t.Fatal("a finished session still holds its script engine")
	}
}

// The loop keeps a bounded audit per session: the newest events.
func TestLoopBoundsEachSessionsAudit(t *testing.T) {
	tr := newChanTransport()
	l, err := StartLoop(LoopConfig{Transport: tr, HostID: "h1", AuditPerSession: 10,
		Catalog: func(rt *host.Runtime) error {
			return rt.RegisterLocalTool(host.NewToolPolicy("local.echo"), func(in string) (string, error) { return in, nil })
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Stop)
	id := submitID(t, l, `for (let i = 0; i < 50; i++) { await tool.start("local.echo", "x") }`)
	waitState(t, l, id, SessionCompleted)
	_, audit, err := l.Status(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if len(audit) != 10 || audit[len(audit)-1].Outcome != host.AuditSucceeded {
		t.Fatalf("audit of %d events ending %+v, want the newest 10", len(audit), audit[len(audit)-1])
	}
}

// Over its suspended-session limit a host refuses new scripts
// (ErrHostBusy) and leaves the accepted ones alone; a finished one frees
// its place.
func TestLoopRefusesSessionsOverTheLimit(t *testing.T) {
	tr := newChanTransport()
	l, err := StartLoop(LoopConfig{Transport: tr, HostID: "h1", Limits: Limits{MaxSuspendedSessions: 2},
		Catalog: tooltest.Catalog[*host.Runtime](t, toolspec.Spec{Name: "t"})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Stop)
	first := submitID(t, l, `return await tool.start("t", "1")`)
	submitID(t, l, `return await tool.start("t", "2")`)
	inv := next(t, tr)
	next(t, tr)
	if _, err := l.Submit(context.Background(), Submission{Source: `return await tool.start("t", "3")`}); !errors.Is(err, ErrHostBusy) {
		t.Fatalf("third submission: %v, want ErrHostBusy", err)
	}
	// A script that does not wait takes no place.
	if s, err := l.Submit(context.Background(), Submission{Source: `return "now"`}); err != nil || s.State != SessionCompleted {
		t.Fatalf("a script that finishes at once: %+v, %v", s, err)
	}
	p := protocol.TextPayload("one")
	tr.Reply(protocol.Result{RequestID: inv.RequestID, Attempt: 1, Status: protocol.ResultSucceeded, Payload: &p})
	waitState(t, l, first, SessionCompleted)
	submitID(t, l, `return await tool.start("t", "4")`)
}

// A submission may not ask for more than the host's maxima, and one that
// asks for nothing gets the host's defaults.
func TestLoopLimitsBudgetAndPending(t *testing.T) {
	tr := newChanTransport()
	l, err := StartLoop(LoopConfig{Transport: tr, HostID: "h1",
		Limits: Limits{DefaultToolCallBudget: 2, MaxToolCallBudget: 5, MaxPending: 7},
		Catalog: func(rt *host.Runtime) error {
			return rt.RegisterLocalTool(host.NewToolPolicy("local.echo"), func(in string) (string, error) { return in, nil })
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Stop)
	for _, sub := range []Submission{{Source: `1`, ToolCallBudget: 6}, {Source: `1`, MaxPending: 8}} {
		if _, err := l.Submit(context.Background(), sub); !errors.Is(err, ErrLimitTooHigh) {
			t.Errorf("submission %+v: %v, want ErrLimitTooHigh", sub, err)
		}
	}
	id := submitID(t, l, `for (let i = 0; i < 3; i++) { await tool.start("local.echo", "x") }`)
	if s := waitState(t, l, id, SessionFailed); !strings.Contains(s.Error, "budget") {
		t.Fatalf("a third call under the default budget of 2: %q", s.Error)
	}
}

// Worker-side stream bounds span attempts: a retry carries what earlier
// attempts streamed. A chunk the host refuses is told to the worker once
// per attempt, so it can stop.
func TestLoopStreamBoundsSpanAttemptsAndDenialsReachTheWorker(t *testing.T) {
	tr := newChanTransport()
	l := startTestLoop(t, tr, tooltest.Catalog[*host.Runtime](t, toolspec.Spec{Name: "t", MaxAttempts: 2,
		Stream: &toolspec.StreamPolicy{MaxChunks: 3, MaxChunkBytes: 100, MaxSourceBytes: 1000, MaxReleasedBytes: 1000}}))
	id := submitID(t, l, `await tool.start("t", "x")`)
	first := next(t, tr)
	chunk := func(inv protocol.Invoke, seq uint64, text string) {
		c := protocol.Chunk{RequestID: inv.RequestID, Sequence: seq, Text: text}
		tr.Message(protocol.ChunkMessage(c))
	}
	chunk(first, 1, "ab")
	chunk(first, 2, "cde")
	tr.Reply(protocol.Result{RequestID: first.RequestID, Attempt: 1, Status: protocol.ResultRetryTransient, Error: "again"})
	second := next(t, tr)
	if s := second.Stream; s == nil || s.UsedChunks != 2 || s.UsedSourceBytes != 5 || s.UsedReleasedBytes != 5 {
		t.Fatalf("attempt 2 stream %+v, want 2 chunks and 5 bytes used", s)
	}
	chunk(second, 3, "f")
	chunk(second, 4, "g") // the fourth chunk of the operation: refused
	chunk(second, 5, "h") // refused again: no second denial
	testwait.Until(t, 0, "the stream denial", func() bool { return len(tr.Denials()) > 0 })
	d := tr.Denials()[0]
	if d.RequestID != second.RequestID || d.Attempt != 2 || d.Tool != "t" || !strings.Contains(d.Reason, "stream limit") {
		t.Fatalf("denial %+v", d)
	}
	p := protocol.TextPayload("done")
	tr.Reply(protocol.Result{RequestID: second.RequestID, Attempt: 2, Status: protocol.ResultSucceeded, Payload: &p})
	// Events are applied in order: once the result is, both refused
	// chunks were.
	waitState(t, l, id, SessionCompleted)
	if ds := tr.Denials(); len(ds) != 1 {
		t.Fatalf("denials %+v, want one for the attempt", ds)
	}
}
