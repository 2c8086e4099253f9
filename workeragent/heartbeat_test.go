package workeragent_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/idempotency"
	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/internal/tooltest"
	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/toolspec"
	"github.com/splashfabric/splashfabric/workeragent"
)

// TestHeartbeatKeepsLongCallAlive runs calls for longer than the ack wait:
// the heartbeat's progress reports keep the stream from redelivering them,
// and only a claimed call renews a lease.
func TestHeartbeatKeepsLongCallAlive(t *testing.T) {
	tests := []struct {
		name         string
		idempotent   bool
		wantRenewals bool
	}{
		{"claimed", false, true},
		{"idempotent", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			var runs atomic.Int64
			work := e.fcfg.AckWait * 8 / 5
			a := e.startAgent("w1", func(a *workeragent.Agent) {
				must(t, a.HandleTool(tooltest.Tool(t, toolspec.Spec{Name: "long", Idempotent: tt.idempotent}), workeragent.HandlerFunc(func(ctx context.Context, c *workeragent.Call) (workeragent.Output, error) {
					runs.Add(1)
					// The work itself takes this long; nothing waits on it.
					select {
					case <-time.After(work):
					case <-ctx.Done():
						return workeragent.Output{}, context.Cause(ctx)
					}
					return workeragent.Result("done"), nil
				})))
			})
			before := e.journalSeq(t)
			e.publish(e.newInvoke("long", "x"))
			if res := e.result(t); res.Status != protocol.ResultSucceeded {
				t.Fatalf("result = %+v", res)
			}
			// The answer goes out before its journal write; the ack
			// follows both.
			testwait.Until(t, 0, "call acked", func() bool { return e.pending(t, "long") == 0 })
			if s := a.Stats(); runs.Load() != 1 || s.Redeliveries != 0 {
				t.Fatalf("runs = %d, stats = %+v", runs.Load(), s)
			}
			writes := e.journalSeq(t) - before
			// Begin and Finish plus any renewals; an Idempotent call
			// writes none (its answer is its record).
			if renewed := writes > 2; renewed != tt.wantRenewals || (!tt.wantRenewals && writes != 0) {
				t.Fatalf("%d journal writes, want renewals = %v", writes, tt.wantRenewals)
			}
		})
	}
}

// TestLeaseLostStopsHandler has the journal record move on under a running
// claimed call: the next heartbeat finds the lease lost, cancels the
// handler with that cause, and the redelivery replays what the journal
// holds instead of this run's answer.
func TestLeaseLostStopsHandler(t *testing.T) {
	e := newEnv(t)
	var runs atomic.Int64
	started := make(chan struct{}, 1)
	causes := make(chan error, 1)
	a := e.startAgent("w1", func(a *workeragent.Agent) {
		must(t, a.HandleTool(tooltest.Text(t, "work"), workeragent.HandlerFunc(func(ctx context.Context, c *workeragent.Call) (workeragent.Output, error) {
			runs.Add(1)
			started <- struct{}{}
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return workeragent.Result("this run"), nil
		})))
	})
	inv := e.newInvoke("work", "x")
	e.publish(inv)
	testwait.Receive(t, 0, "start", started)
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Scale(10*time.Second))
	defer cancel()
	other, err := idempotency.NewKV(ctx, e.js, idempotency.KVConfig{})
	must(t, err)
	stored := protocol.TextPayload("stored elsewhere")
	if _, ok, err := other.Store(ctx, inv.IdempotencyKey, "intruder", idempotency.Result{Status: idempotency.StatusSucceeded, Payload: &stored}); err != nil || !ok {
		t.Fatalf("Store = %v, %v", ok, err)
	}
	if cause := testwait.Receive(t, 0, "handler cancelled", causes); !errors.Is(cause, idempotency.ErrLeaseLost) {
		t.Fatalf("cause = %v, want ErrLeaseLost", cause)
	}
	if res := e.result(t); res.Status != protocol.ResultSucceeded || res.Payload.Text != "stored elsewhere" {
		t.Fatalf("result = %+v", res)
	}
	if s := a.Stats(); runs.Load() != 1 || s.DedupeHits != 1 || s.Redeliveries != 1 {
		t.Fatalf("runs = %d, stats = %+v", runs.Load(), s)
	}
}
