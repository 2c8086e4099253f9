package itest

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/hostloop"
	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/workeragent"
)

// resumeScale is more durable sessions than a stream allows consumers
// (1,000), which a host that read each ledger through a consumer of its
// own, and left it behind, could never resume.
const resumeScale = 1100

// TestHostResumesMoreSessionsThanAStreamHasConsumers kills a host holding
// resumeScale suspended durable sessions, each waiting on a call a worker
// holds, and starts its next process: it is ready at once (new scripts run
// while the others come back), brings every session back, leaves no
// consumer on SPLASH_LEDGER, and every script completes once the worker
// answers, each effect once.
func TestHostResumesMoreSessionsThanAStreamHasConsumers(t *testing.T) {
	if testing.Short() {
		t.Skip("resumes over a thousand sessions")
	}
	c := newCluster(t, options{tools: []hostTool{tool("it.hold"), tool("it.now")}, durable: true})
	release := make(chan struct{})
	var started atomic.Int64
	ok := &successes{}
	c.startWorker("w1", func(a *workeragent.Agent) {
		must(t, a.Handle("it.hold", workeragent.HandlerFunc(func(ctx context.Context, call *workeragent.Call) (workeragent.Output, error) {
			started.Add(1)
			select {
			case <-release:
			case <-ctx.Done():
				return workeragent.Output{}, ctx.Err()
			}
			ok.add(call.IdempotencyKey)
			return workeragent.Result(call.Input.Text + "!"), nil
		}), workeragent.Concurrency(2*resumeScale)))
		must(t, a.Handle("it.now", workeragent.HandlerFunc(echo)))
	})
	ids := make([]hostloop.SessionID, resumeScale)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < len(ids); i += 8 {
				ctx, cancel := opCtx()
				s, err := c.loop.Submit(ctx, hostloop.Submission{Source: sprintf(`return await tool.start("it.hold", "s%d")`, i)})
				cancel()
				if err != nil {
					t.Error(err)
					return
				}
				c.obs.seen(s)
				ids[i] = s.ID
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	testwait.Until(t, 2*time.Minute, "every call held by the worker", func() bool { return started.Load() == resumeScale })

	c.killHost(false)
	c.startHost()
	// Ready at once: a new script runs while the others come back.
	fresh := c.submit(`return await tool.start("it.now", "fresh")`)
	wantCompleted(t, c.wait(fresh, time.Minute), "fresh")
	testwait.Until(t, 2*time.Minute, "every session resumed", func() bool { return c.loop.Resuming() == 0 })
	for _, id := range ids[:10] {
		if s, _ := c.status(id); s.State != hostloop.SessionSuspended || len(s.Operations) != 1 {
			t.Fatalf("resumed session %s: %+v", id, s)
		}
	}
	ctx, cancel := opCtx()
	defer cancel()
	ledger, err := c.hostJS.Stream(ctx, fabric.StreamLedger)
	must(t, err)
	info, err := ledger.Info(ctx)
	must(t, err)
	if info.State.Consumers != 0 {
		t.Fatalf("resuming left %d consumers on %s", info.State.Consumers, fabric.StreamLedger)
	}
	close(release)
	for i, id := range ids {
		wantCompleted(t, c.wait(id, time.Minute), sprintf("s%d!", i))
	}
	ok.check(t, resumeScale)
}
