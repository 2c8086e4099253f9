package itest

import (
	"fmt"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/hostloop"
	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/toolspec"
	"github.com/splashfabric/splashfabric/workeragent"
)

// Scenario 10: the NATS server restarts on the same store mid-load. Clients
// reconnect, nothing is lost, every script completes; a call runs more than
// once only where a worker took over a lease the outage left behind.
func TestServerRestartMidLoad(t *testing.T) {
	const scripts, calls = 10, 20
	c := newCluster(t, options{tools: []toolspec.Spec{idempotentTool("it.durable")}})
	fx := newEffects()
	h := counting(fx, echo)
	var workers []*worker
	for i := range 2 {
		workers = append(workers, c.startWorker(fmt.Sprintf("w%d", i+1), func(a *workeragent.Agent) {
			must(t, a.HandleTool(c.tool("it.durable"), h))
		}))
	}
	ids := make([]hostloop.SessionID, scripts)
	for i := range ids {
		ids[i] = c.submit(sequentialScript("it.durable", calls))
	}
	testwait.Until(t, 0, "load to be under way", func() bool { return fx.count() >= scripts*calls/3 })
	c.srv.Restart()
	for _, id := range ids {
		wantCompleted(t, c.wait(id, 60*time.Second), sumTo(calls))
	}
	keys := fx.keys()
	if len(keys) != scripts*calls {
		t.Fatalf("%d keys ran, want %d", len(keys), scripts*calls)
	}
	extra := 0
	for _, n := range keys {
		extra += n - 1
	}
	var takenOver uint64
	for _, w := range workers {
		takenOver += w.Stats().TakenOver
		t.Logf("%s: %+v", w.id, w.Stats())
	}
	if uint64(extra) > takenOver {
		t.Fatalf("%d repeated runs but only %d takeovers explain them", extra, takenOver)
	}
	t.Logf("runs %d for %d calls; host rejections %v", fx.count(), scripts*calls, c.tr.Rejected())
}
