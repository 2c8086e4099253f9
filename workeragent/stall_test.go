package workeragent_test

import (
	"context"
	"sync"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/workeragent"
)

// TestNoStallUnderFullSlots floods a tool with every slot full while the
// agent's connection is crowded with other publishers, the load under
// which the JetStream client could hand out every message it had asked
// for while its next pull request was still being sent, and then hold no
// request at the server until two heartbeats were missed (a second's
// stall). The agent must never leave its pull silent that long.
func TestNoStallUnderFullSlots(t *testing.T) {
	if testing.Short() {
		t.Skip("a flood")
	}
	e := newEnv(t)
	const flood, slots, publishers = 1000, 16, 8
	h := workeragent.HandlerFunc(func(_ context.Context, c *workeragent.Call) (workeragent.Output, error) {
		return workeragent.Result(c.Input.Text), nil
	})
	nc := e.srv.Connect()
	a := e.startAgentConn("w1", nc, func(a *workeragent.Agent) {
		must(t, a.Handle("echo", h, workeragent.Concurrency(slots), workeragent.Idempotent()))
	})
	subject, err := fabric.InvokeSubject("echo")
	must(t, err)
	// Publishers on the agent's connection keep its lock contended, so
	// the client's pull goroutine waits behind them.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range publishers {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				_ = nc.Publish("noise", nil)
			}
		})
	}
	defer wg.Wait()
	defer close(stop)
	for range flood {
		inv := e.newInvoke("echo", "x")
		data, err := e.codec.SealInvoke(inv)
		must(t, err)
		m := nats.NewMsg(subject)
		m.Data = data
		m.Header.Set(jetstream.MsgIDHeader, inv.IdempotencyKey+"/1")
		m.Header.Set(fabric.HeaderHost, e.hostID)
		if _, err := e.js.PublishMsgAsync(m); err != nil {
			t.Fatal(err)
		}
	}
	for range flood {
		testwait.Receive(t, 0, "result", e.results)
	}
	if n := workeragent.MissedHeartbeats(a.Agent); n != 0 {
		t.Fatalf("the pull went silent for two heartbeats %d times", n)
	}
}
