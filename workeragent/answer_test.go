package workeragent_test

import (
	"context"
	"crypto/rand"
	"sync/atomic"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/internal/tooltest"
	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/toolspec"
	"github.com/splashfabric/splashfabric/workeragent"
)

// storeAnswer puts msg, sealed by c as frame 1 of inv's attempt, on inv's
// answer subject, as a worker that answered inv would have.
func (e *env) storeAnswer(t *testing.T, c *fabric.Codec, inv protocol.Invoke, msg protocol.WorkerMessage) {
	t.Helper()
	m, err := c.SealWorker(inv.RequestID, inv.Attempt, 1, msg)
	must(t, err)
	m.Subject = fabric.AnswerSubject(e.hostID, inv.Tool, inv.IdempotencyKey)
	m.Header.Set(fabric.HeaderTool, inv.Tool)
	m.Header.Set(fabric.HeaderMsgID, c.EventMsgID(inv.RequestID, inv.Attempt, msg.Kind))
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Scale(10*time.Second))
	defer cancel()
	_, err = e.js.PublishMsg(ctx, m)
	must(t, err)
}

func succeeded(inv protocol.Invoke, text string) protocol.WorkerMessage {
	p := protocol.TextPayload(text)
	return protocol.ResultMessage(protocol.Result{RequestID: inv.RequestID, Attempt: inv.Attempt, Status: protocol.ResultSucceeded, Payload: &p})
}

// TestIdempotentRedeliveryReplaysStoredAnswer: a worker took the call,
// stored its answer and was lost before it acked. The redelivery finds
// the answer on the operation's answer subject and replays it without
// running the handler.
func TestIdempotentRedeliveryReplaysStoredAnswer(t *testing.T) {
	e := newEnv(t)
	results := e.allResults(t)
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Scale(20*time.Second))
	defer cancel()
	// The lost worker: it pulls the invocation and never acks it.
	cons, err := fabric.EnsureToolConsumer(ctx, e.js, e.fcfg, "idem")
	must(t, err)
	inv := e.newInvoke("idem", "x")
	e.publish(inv)
	batch, err := cons.Fetch(1)
	must(t, err)
	for range batch.Messages() {
	}
	must(t, batch.Error())
	e.storeAnswer(t, e.codec, inv, succeeded(inv, "stored"))
	wantAnswer(t, results, inv, "stored")

	var runs atomic.Int64
	a := e.startAgent("w1", func(a *workeragent.Agent) {
		must(t, a.HandleTool(tooltest.Tool(t, toolspec.Spec{Name: "idem", Idempotent: true}), numbered(&runs)))
	})
	// The redelivery comes once the lost worker's ack wait has passed.
	wantAnswer(t, results, inv, "stored")
	testwait.Until(t, 0, "queue empty", func() bool { return e.pending(t, "idem") == 0 })
	if s := a.Stats(); runs.Load() != 0 || s.Executed != 0 || s.DedupeHits != 1 || s.Redeliveries != 1 || s.TakenOver != 0 {
		t.Fatalf("runs = %d, stats = %+v", runs.Load(), s)
	}
}

// TestIdempotentRepeatIgnoresForgedAnswer: what sits on an answer subject
// is replayed only if it is an authentic worker answer. A forgery, or an
// authentic frame that is no stored answer, is counted and the call runs;
// its own answer, refused on the taken subject, is stored over the
// forgery, so a later repeat replays it.
func TestIdempotentRepeatIgnoresForgedAnswer(t *testing.T) {
	other, err := protocol.GenerateSessionKey(rand.Reader)
	must(t, err)
	forger, err := fabric.NewCodec(other)
	must(t, err)
	tests := []struct {
		name  string
		store func(e *env, inv protocol.Invoke)
	}{
		{"sealed under another key", func(e *env, inv protocol.Invoke) {
			e.storeAnswer(t, forger, inv, succeeded(inv, "forged"))
		}},
		{"a retryable result", func(e *env, inv protocol.Invoke) {
			e.storeAnswer(t, e.codec, inv, protocol.ResultMessage(protocol.Result{
				RequestID: inv.RequestID, Attempt: inv.Attempt, Status: protocol.ResultRetryTransient, Error: "busy",
			}))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			results := e.allResults(t)
			var runs atomic.Int64
			a := e.startAgent("w1", func(a *workeragent.Agent) {
				must(t, a.HandleTool(tooltest.Tool(t, toolspec.Spec{Name: "idem", Idempotent: true}), numbered(&runs)))
			})
			e.forgeries.Store(true)
			inv := e.newInvoke("idem", "x")
			tt.store(e, inv)
			// A second attempt looks for a stored answer before it runs.
			inv.Attempt = 2
			e.publish(inv)
			ran := func(r protocol.Result) bool {
				return r.Attempt == 2 && r.Status == protocol.ResultSucceeded && r.Payload != nil && r.Payload.Text == "run-1"
			}
			// What the agent sent, and what the host's consumer got.
			awaitResult(t, results, "the run's answer sent", ran)
			awaitResult(t, e.results, "the run's answer stored", ran)
			testwait.Until(t, 0, "queue empty", func() bool { return e.pending(t, "idem") == 0 })
			if s := a.Stats(); runs.Load() != 1 || s.DedupeHits != 0 || s.Forged == 0 {
				t.Fatalf("runs = %d, stats = %+v", runs.Load(), s)
			}
			inv.Attempt = 3
			e.publish(inv)
			replayed := func(r protocol.Result) bool {
				return r.Attempt == 3 && r.Status == protocol.ResultSucceeded && r.Payload != nil && r.Payload.Text == "run-1"
			}
			awaitResult(t, e.results, "the stored answer replayed", replayed)
			testwait.Until(t, 0, "queue empty", func() bool { return e.pending(t, "idem") == 0 })
			if s := a.Stats(); runs.Load() != 1 || s.DedupeHits != 1 {
				t.Fatalf("runs = %d, stats = %+v", runs.Load(), s)
			}
		})
	}
}

// awaitResult waits for a result that satisfies ok, skipping others.
func awaitResult(t *testing.T, results chan protocol.Result, what string, ok func(protocol.Result) bool) {
	t.Helper()
	for {
		if ok(testwait.Receive(t, 0, what, results)) {
			return
		}
	}
}

// TestReconcileFindsStoredAnswer: for an Idempotent tool, whose calls keep
// no journal record, the agent answers a reconciliation from the answer
// subject under the host the request names; a forgery there is no answer.
// A claimed tool does not look there.
func TestReconcileFindsStoredAnswer(t *testing.T) {
	e := newEnv(t)
	e.forgeries.Store(true)
	e.startAgent("w1", func(a *workeragent.Agent) {
		must(t, a.HandleTool(tooltest.Tool(t, toolspec.Spec{Name: "idem", Idempotent: true}), workeragent.HandlerFunc(blockUntilDone)))
		must(t, a.HandleTool(tooltest.Text(t, "claimed"), workeragent.HandlerFunc(blockUntilDone)))
	})
	tr := e.hostTransport(t)
	ctx := reconcileCtx(t)
	other, err := protocol.GenerateSessionKey(rand.Reader)
	must(t, err)
	forger, err := fabric.NewCodec(other)
	must(t, err)
	call := func(key string) protocol.Invoke {
		inv := e.newInvoke("idem", "x")
		inv.IdempotencyKey = key
		return inv
	}
	inv := call("op-succeeded")
	e.storeAnswer(t, e.codec, inv, succeeded(inv, "done"))
	inv = call("op-failed")
	e.storeAnswer(t, e.codec, inv, protocol.ResultMessage(protocol.Result{RequestID: inv.RequestID, Attempt: 1, Status: protocol.ResultFailed, Error: "disk full"}))
	inv = call("op-indeterminate")
	e.storeAnswer(t, e.codec, inv, protocol.ResultMessage(protocol.Result{RequestID: inv.RequestID, Attempt: 1, Status: protocol.ResultIndeterminate, Error: "lost"}))
	inv = call("op-cancelled")
	e.storeAnswer(t, e.codec, inv, protocol.CancelReplyMessage(protocol.CancelReply{RequestID: inv.RequestID, Attempt: 1, Disposition: protocol.CancelAcknowledged}))
	inv = call("op-forged")
	e.storeAnswer(t, forger, inv, succeeded(inv, "forged"))

	cases := []struct {
		tool, key string
		state     protocol.OperationState
		payload   string
		err       string
	}{
		{"idem", "op-succeeded", protocol.OperationSucceeded, "done", ""},
		{"idem", "op-failed", protocol.OperationFailed, "", "disk full"},
		{"idem", "op-indeterminate", protocol.OperationFailed, "", "indeterminate: lost"},
		{"idem", "op-cancelled", protocol.OperationCancelled, "", ""},
		{"idem", "op-forged", protocol.OperationUnknown, "", ""},
		{"idem", "op-never-seen", protocol.OperationUnknown, "", ""},
		{"claimed", "op-succeeded", protocol.OperationUnknown, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.tool+"/"+tc.key, func(t *testing.T) {
			res, err := tr.Reconcile(ctx, "session-1", tc.tool, tc.key)
			must(t, err)
			if res.Status.State != tc.state || res.Status.Error != tc.err {
				t.Fatalf("status = %+v, want %s %q", res.Status, tc.state, tc.err)
			}
			if tc.state == protocol.OperationSucceeded && (res.Status.Payload == nil || res.Status.Payload.Text != tc.payload) {
				t.Fatalf("payload = %+v, want %q", res.Status.Payload, tc.payload)
			}
		})
	}
}
