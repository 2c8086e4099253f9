package workeragent_test

import (
	"context"
	"sync"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/internal/tooltest"
	"github.com/splashfabric/splashfabric/toolspec"
	"github.com/splashfabric/splashfabric/workeragent"
)

// TestNoStallUnderFullSlots floods a tool with every slot full while
// other goroutines keep the agent's connection lock contended: the load
// under which nats.go's Consume handed out every message it had asked for
// while the goroutine that sent its next pull request still had to mark
// the send done, skipped every pull decision meanwhile, and then held no
// request at the server until two heartbeats were missed (a second's
// stall; against Consume this flood stalled in six runs of six, one to
// five times each). Every call must be picked up without the pull ever
// having been restarted for silence.
func TestNoStallUnderFullSlots(t *testing.T) {
	if testing.Short() {
		t.Skip("a flood")
	}
	e := newEnv(t)
	const flood, slots, lockers = 1000, 16, 8
	h := workeragent.HandlerFunc(func(_ context.Context, c *workeragent.Call) (workeragent.Output, error) {
		return workeragent.Result(c.Input.Text), nil
	})
	nc := e.srv.Connect()
	a := e.startAgentConn("w1", nc, func(a *workeragent.Agent) {
		must(t, a.HandleTool(tooltest.Tool(t, toolspec.Spec{Name: "echo", Idempotent: true}), h, workeragent.Concurrency(slots)))
	})
	subject, err := fabric.InvokeSubject("echo")
	must(t, err)
	// Goroutines taking the agent's connection lock keep it contended, as
	// many publishers would, without loading the server: a goroutine that
	// releases the lock to a waiter gives up its time slice, so whatever
	// sends a pull request is paused right after the send.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range lockers {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				_ = nc.Stats()
			}
		})
	}
	defer wg.Wait()
	defer close(stop)
	for range flood {
		inv := e.newInvoke("echo", "x")
		m, err := e.codec.SealInvoke(inv)
		must(t, err)
		m.Subject = subject
		m.Header.Set(jetstream.MsgIDHeader, inv.IdempotencyKey+"/1")
		m.Header.Set(fabric.HeaderHost, e.hostID)
		if _, err := e.js.PublishMsgAsync(m); err != nil {
			t.Fatal(err)
		}
	}
	for range flood {
		testwait.Receive(t, 0, "result", e.results)
	}
	if n := a.Stats().PullRestarts; n != 0 {
		t.Fatalf("the pull went silent for two heartbeats %d times", n)
	}
}
