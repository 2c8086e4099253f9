package workeragent_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/idempotency"
	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/internal/tooltest"
	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/workeragent"
)

// TestRenewalOutlivesALostAcknowledgement loses the acknowledgement of a
// lease renewal that the journal stored (a TCP proxy drops what the server
// says, then cuts the connection). The renewal after it finds the record
// moved on by this very claim and resumes it, so the call runs to its end
// once, and its answer is the stored result, where it was cancelled as a
// lost lease and ended indeterminate.
func TestRenewalOutlivesALostAcknowledgement(t *testing.T) {
	e := newEnv(t)
	p := e.srv.StartCutProxy(t)
	nc := p.Connect(t)

	var runs atomic.Int64
	started := make(chan struct{}, 1)
	release := make(chan struct{})
	a := e.startAgentConn("w1", nc, func(a *workeragent.Agent) {
		must(t, a.HandleTool(tooltest.Text(t, "work"), workeragent.HandlerFunc(func(ctx context.Context, c *workeragent.Call) (workeragent.Output, error) {
			runs.Add(1)
			started <- struct{}{}
			select {
			case <-release:
				return workeragent.Result("this run"), nil
			case <-ctx.Done():
				return workeragent.Output{}, context.Cause(ctx)
			}
		})))
	})
	inv := e.newInvoke("work", "x")
	e.publish(inv)
	testwait.Receive(t, 0, "start", started)

	ctx, cancel := context.WithTimeout(context.Background(), testwait.Scale(20*time.Second))
	defer cancel()
	journal, err := idempotency.NewKV(ctx, e.js, idempotency.KVConfig{})
	must(t, err)
	revision := func() uint64 {
		r, err := journal.Get(ctx, inv.IdempotencyKey)
		if err != nil {
			return 0
		}
		return r.Revision
	}
	lost := p.LoseNextWrite(t, revision)
	testwait.Until(t, 0, "a renewal after the lost acknowledgement", func() bool { return revision() > lost })
	close(release)

	if res := e.result(t); res.Status != protocol.ResultSucceeded || res.Payload.Text != "this run" {
		t.Fatalf("result = %+v", res)
	}
	testwait.Until(t, 0, "call acked", func() bool { return e.pending(t, "work") == 0 })
	r, err := journal.Get(ctx, inv.IdempotencyKey)
	if err != nil || r.State != idempotency.StateDone || r.Result.Payload.Text != "this run" || r.Claims != 1 {
		t.Fatalf("record = %+v, %v", r, err)
	}
	if s := a.Stats(); runs.Load() != 1 || s.Redeliveries != 0 {
		t.Fatalf("runs = %d, stats = %+v", runs.Load(), s)
	}
}
