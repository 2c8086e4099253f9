package itest

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/hostloop"
	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/toolspec"
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
	// The worker renews a claim's lease per call it holds: the suite's
	// one-second lease, renewed every 200 ms for over a thousand calls,
	// is more journal writes than a busy machine keeps up with under
	// -race; the production default is 30 s. What this test is about is
	// the host's restart, not the worker's leases.
	c := newCluster(t, options{tools: []toolspec.Spec{tool("it.hold"), tool("it.now")}, durable: true,
		lease: testwait.Scale(20 * time.Second), heartbeat: time.Second})
	release := make(chan struct{})
	var started atomic.Int64
	ok := &successes{}
	c.startWorker("w1", func(a *workeragent.Agent) {
		must(t, a.HandleTool(c.tool("it.hold"), workeragent.HandlerFunc(func(ctx context.Context, call *workeragent.Call) (workeragent.Output, error) {
			started.Add(1)
			select {
			case <-release:
			case <-ctx.Done():
				return workeragent.Output{}, ctx.Err()
			}
			ok.add(call.IdempotencyKey)
			return workeragent.Result(call.Input.Text + "!"), nil
		}), workeragent.Concurrency(2*resumeScale)))
		must(t, a.HandleTool(c.tool("it.now"), workeragent.HandlerFunc(echo)))
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

// heavyScript spends a lot of CPU in each of three steps between its
// calls.
const heavyScript = `let s = 0;
for (let step = 0; step < 3; step++) {
	let x = 0; for (let i = 0; i < 2000000; i++) { x = (x + i) %% 1000003 }
	s += (await tool.start("it.now", "step" + step + ":" + x)).length;
}
return "%d:" + s`

// TestResumeOfCPUHeavySessionsLetsNewScriptsRun kills a host holding
// three sessions whose scripts spend long CPU steps between their calls.
// Their replays run in the background of the next process: a new script
// runs while they are still being replayed, instead of waiting for all of
// them, and every one resumes and completes (no replay is given up and
// started over).
func TestResumeOfCPUHeavySessionsLetsNewScriptsRun(t *testing.T) {
	if raceEnabled {
		// Minutes of instrumented JavaScript would test the detector's
		// speed; the resumer's code is raced by the other resume tests.
		t.Skip("CPU-heavy scripts under the race detector")
	}
	c := newCluster(t, options{tools: []toolspec.Spec{tool("it.now")}, durable: true})
	release := make(chan struct{})
	var seen atomic.Int64
	c.startWorker("w1", func(a *workeragent.Agent) {
		must(t, a.HandleTool(c.tool("it.now"), workeragent.HandlerFunc(func(ctx context.Context, call *workeragent.Call) (workeragent.Output, error) {
			// The last call of each script waits, so the three are
			// suspended, every heavy step behind them, when the host dies.
			if strings.HasPrefix(call.Input.Text, "step2") && seen.Add(1) > 0 {
				select {
				case <-release:
				case <-ctx.Done():
					return workeragent.Output{}, ctx.Err()
				}
			}
			return workeragent.Result(call.Input.Text), nil
		}), workeragent.Concurrency(8)))
	})
	var ids []hostloop.SessionID
	for i := range 3 {
		// Its first heavy step runs on this goroutine, in Submit.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		s, err := c.loop.Submit(ctx, hostloop.Submission{Source: sprintf(heavyScript, i), ExecutionBudget: time.Minute})
		cancel()
		must(t, err)
		c.obs.seen(s)
		ids = append(ids, s.ID)
	}
	testwait.Until(t, 5*time.Minute, "the three to wait on their last call", func() bool { return seen.Load() == 3 })

	c.killHost(false)
	c.startHost()
	fresh := c.submit(`return await tool.start("it.now", "fresh")`)
	wantCompleted(t, c.wait(fresh, time.Minute), "fresh")
	if n := c.loop.Resuming(); n == 0 {
		t.Log("the replays ended before the new script did (a fast machine): the ordering was not tested")
	}
	testwait.Until(t, 5*time.Minute, "the three to be resumed", func() bool { return c.loop.Resuming() == 0 })
	close(release)
	for i, id := range ids {
		s := c.wait(id, 5*time.Minute)
		if s.State != hostloop.SessionCompleted || !strings.HasPrefix(s.Value, sprintf("%d:", i)) {
			t.Fatalf("session %d: %+v", i, s)
		}
	}
}
