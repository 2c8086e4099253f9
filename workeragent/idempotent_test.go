package workeragent_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/splashfabric/splashfabric/idempotency"
	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/internal/tooltest"
	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/toolspec"
	"github.com/splashfabric/splashfabric/workeragent"
)

// allResults collects every result published to the host's events
// subject, including those the events stream drops as duplicates of an
// attempt's first answer: what the agent answered, not what the host
// keeps.
func (e *env) allResults(t *testing.T) chan protocol.Result {
	t.Helper()
	ch := make(chan protocol.Result, 16)
	// One subscription over every events subject, so results arrive in
	// the order they were sent whichever subject (the host's events
	// subject or an answer subject below it) they went to.
	events := "splash.events." + e.hostID + "."
	sub, err := e.nc.Subscribe("splash.events.>", func(m *nats.Msg) {
		if !strings.HasPrefix(m.Subject, events) {
			return
		}
		if msg, _, err := e.codec.OpenWorker(m.Header, m.Data); err == nil && msg.Result != nil {
			ch <- *msg.Result
		}
	})
	must(t, err)
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	must(t, e.nc.Flush())
	return ch
}

// numbered answers "run-N" on its Nth run, so an answer tells which run
// produced it.
func numbered(runs *atomic.Int64) workeragent.Handler {
	return workeragent.HandlerFunc(func(context.Context, *workeragent.Call) (workeragent.Output, error) {
		return workeragent.Result(fmt.Sprintf("run-%d", runs.Add(1))), nil
	})
}

func wantAnswer(t *testing.T, results chan protocol.Result, inv protocol.Invoke, text string) {
	t.Helper()
	res := testwait.Receive(t, 0, "answer", results)
	if res.Status != protocol.ResultSucceeded || res.Payload == nil || res.Payload.Text != text ||
		res.RequestID != inv.RequestID || res.Attempt != inv.Attempt {
		t.Fatalf("answer = %+v, want %q for attempt %d", res, text, inv.Attempt)
	}
}

func TestIdempotentDuplicateAfterCompletion(t *testing.T) {
	tests := []struct {
		name string
		// again is the duplicate's delivery: its attempt and message id.
		again    func(inv protocol.Invoke) (protocol.Invoke, string)
		wantRuns int64
		// wantSeen are the duplicate's answers in publish order, those
		// the stream refuses included.
		wantSeen []string
		wantHits uint64
	}{
		// A republish under a new message id is a first delivery of
		// attempt 1: it runs without looking, the answer subject refuses
		// its answer (seen by a plain subscriber, not stored), and it
		// answers the stored one.
		{name: "same attempt republished", wantRuns: 2, wantSeen: []string{"run-2", "run-1"}, wantHits: 1, again: func(inv protocol.Invoke) (protocol.Invoke, string) {
			return inv, inv.IdempotencyKey + "/1-again"
		}},
		// A host that restarted dispatches the key again under a new
		// request id: the same, re-bound to the new request.
		{name: "new request id", wantRuns: 2, wantSeen: []string{"run-2", "run-1"}, wantHits: 1, again: func(inv protocol.Invoke) (protocol.Invoke, string) {
			inv.RequestID += "-again"
			return inv, inv.IdempotencyKey + "/1-again"
		}},
		// A later attempt may repeat an earlier one, so it reads the
		// answer subject first and replays without running.
		{name: "later attempt", wantRuns: 1, wantSeen: []string{"run-1"}, wantHits: 1, again: func(inv protocol.Invoke) (protocol.Invoke, string) {
			inv.Attempt = 2
			return inv, inv.IdempotencyKey + "/2"
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
			inv := e.newInvoke("idem", "x")
			e.publish(inv)
			wantAnswer(t, results, inv, "run-1")
			// The answer is the stored record; the ack follows it.
			testwait.Until(t, 0, "first call acked", func() bool { return e.pending(t, "idem") == 0 })
			dup, msgID := tt.again(inv)
			e.publishAs(dup, msgID)
			for _, text := range tt.wantSeen {
				wantAnswer(t, results, dup, text)
			}
			testwait.Until(t, 0, "queue empty", func() bool { return e.pending(t, "idem") == 0 })
			if got := runs.Load(); got != tt.wantRuns {
				t.Fatalf("runs = %d, want %d", got, tt.wantRuns)
			}
			if s := a.Stats(); s.DedupeHits != tt.wantHits || s.Executed != uint64(tt.wantRuns) || s.TakenOver != 0 || s.Deferred != 0 {
				t.Fatalf("stats = %+v", s)
			}
		})
	}
}

func TestIdempotentConcurrentDuplicateAnswersFirstStored(t *testing.T) {
	e := newEnv(t)
	results := e.allResults(t)
	var runs atomic.Int64
	started := make(chan int64, 2)
	gates := []chan struct{}{make(chan struct{}), make(chan struct{})}
	a := e.startAgent("w1", func(a *workeragent.Agent) {
		must(t, a.HandleTool(tooltest.Tool(t, toolspec.Spec{Name: "idem", Idempotent: true}), workeragent.HandlerFunc(func(ctx context.Context, _ *workeragent.Call) (workeragent.Output, error) {
			n := runs.Add(1)
			started <- n
			// A test that fails before opening a gate still lets the
			// agent's teardown cancel the run.
			select {
			case <-gates[n-1]:
			case <-ctx.Done():
				return workeragent.Output{}, context.Cause(ctx)
			}
			return workeragent.Result(fmt.Sprintf("run-%d", n)), nil
		})))
	})
	inv := e.newInvoke("idem", "x")
	e.publish(inv)
	testwait.Receive(t, 0, "first run", started)
	// No claim holds the key, so the duplicate runs beside the first.
	e.publishAs(inv, inv.IdempotencyKey+"/1-again")
	testwait.Receive(t, 0, "second run", started)
	// Both are first deliveries of attempt 1, so each publishes its own
	// answer on the answer subject; the stream stores the first and
	// refuses the second (a plain subscriber sees it all the same), whose
	// run then answers the stored one.
	close(gates[1])
	wantAnswer(t, results, inv, "run-2")
	close(gates[0])
	wantAnswer(t, results, inv, "run-1")
	wantAnswer(t, results, inv, "run-2")
	testwait.Until(t, 0, "queue empty", func() bool { return e.pending(t, "idem") == 0 })
	if s := a.Stats(); s.Executed != 2 || s.DedupeHits != 1 || s.Deferred != 0 {
		t.Fatalf("stats = %+v", s)
	}
}

// TestJournalWritesPerCall counts the journal bucket's stream writes: a
// claimed call's Begin and Finish against none for an Idempotent call,
// whose answer is its record.
func TestJournalWritesPerCall(t *testing.T) {
	const calls = 5
	tests := []struct {
		tool      string
		wantWrite uint64
	}{
		{"claimed", 2},
		{"idempotent", 0},
	}
	e := newEnv(t)
	var runs atomic.Int64
	e.startAgent("w1", func(a *workeragent.Agent) {
		for _, tt := range tests {
			must(t, a.HandleTool(tooltest.Tool(t, toolspec.Spec{Name: tt.tool, Idempotent: tt.tool == "idempotent"}), numbered(&runs)))
		}
	})
	for _, tt := range tests {
		before := e.journalSeq(t)
		for range calls {
			e.publish(e.newInvoke(tt.tool, "x"))
			if res := e.result(t); res.Status != protocol.ResultSucceeded {
				t.Fatalf("%s: result = %+v", tt.tool, res)
			}
		}
		// An answer goes out before its journal write; the ack follows
		// both.
		testwait.Until(t, 0, "queue empty", func() bool { return e.pending(t, tt.tool) == 0 })
		if got := e.journalSeq(t) - before; got != tt.wantWrite*calls {
			t.Errorf("%s: %d journal writes for %d calls, want %d each", tt.tool, got, calls, tt.wantWrite)
		}
	}
}

func (e *env) journalSeq(t *testing.T) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Scale(10*time.Second))
	defer cancel()
	return streamLastSeq(t, ctx, e.js, "KV_"+idempotency.BucketName)
}
