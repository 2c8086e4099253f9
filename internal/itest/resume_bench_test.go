package itest

import (
	"context"
	"flag"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/hostloop"
	"github.com/splashfabric/splashfabric/hostnats"
	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/toolspec"
	"github.com/splashfabric/splashfabric/workeragent"
	"github.com/splashfabric/splashfabric/workflow"
)

// The resume benchmarks: how long a host takes to be ready, and until
// every session is live again, after the host holding them was killed;
// on its own restart and by another host's adoption; and how long one
// session's ledger takes to read and replay, by its length.
//
//	go test -run '^$' -bench 'Resume' -benchtime 1x ./internal/itest/

// BenchmarkResumeSessions kills a host holding n suspended durable
// sessions, each a few calls deep and waiting on a call a worker holds,
// and reports ready-ms (the next host takes a new script) and live-ms
// (every session is live again): on the host's own restart, and when a
// second host adopts them once the first's lease lapsed (live-ms then
// counts from the lapse).
func BenchmarkResumeSessions(b *testing.B) {
	resumeSizes := []int{1000, 10000}
	if *resumeN > 0 {
		resumeSizes = []int{*resumeN}
	}
	for _, n := range resumeSizes {
		for _, how := range []string{"restart", "adoption"} {
			b.Run(fmt.Sprintf("sessions=%d/%s", n, how), func(b *testing.B) {
				for range b.N {
					ready, live := resumeOnce(b, n, how == "adoption")
					b.ReportMetric(float64(ready.Milliseconds()), "ready-ms")
					b.ReportMetric(float64(live.Milliseconds()), "live-ms")
				}
			})
		}
	}
}

var resumeN = flag.Int("resume.n", 0, "resume this many sessions in BenchmarkResumeSessions instead of 1,000 and 10,000")

// threeDeep is a script three calls deep, the last of which the worker
// holds.
const threeDeep = `const a = await tool.start("it.now", "a%d");
const b = await tool.start("it.now", a + "b");
return await tool.start("it.hold", b + "c")`

func resumeOnce(b *testing.B, n int, adoption bool) (ready, live time.Duration) {
	b.StopTimer()
	// Held calls of an idempotent tool with a worker that reports
	// progress rarely: thousands of claimed calls renewing their journal
	// leases every 200ms would measure the worker, not the resume.
	c := newCluster(b, options{tools: []toolspec.Spec{idempotentTool("it.hold"), tool("it.now")}, durable: true,
		fabric: func(cfg *fabric.Config) { cfg.AckWait = time.Minute }, heartbeat: 20 * time.Second, lease: time.Minute})
	var held atomic.Int64
	release := make(chan struct{})
	c.startWorker("w1", func(a *workeragent.Agent) {
		must(b, a.HandleTool(c.tool("it.hold"), workeragent.HandlerFunc(func(ctx context.Context, call *workeragent.Call) (workeragent.Output, error) {
			held.Add(1)
			select {
			case <-release:
			case <-ctx.Done():
				return workeragent.Output{}, ctx.Err()
			}
			return workeragent.Result("done"), nil
		}), workeragent.Concurrency(2*n)))
		must(b, a.HandleTool(c.tool("it.now"), workeragent.HandlerFunc(echo), workeragent.Concurrency(64)))
	})
	defer close(release)
	var first, second *peerHost
	submit := func(ctx context.Context, src string) (hostloop.SessionStatus, error) {
		return c.loop.Submit(ctx, hostloop.Submission{Source: src})
	}
	if adoption {
		first = c.startPeer("ha")
		submit = func(ctx context.Context, src string) (hostloop.SessionStatus, error) {
			return first.loop.Submit(ctx, hostloop.Submission{Source: src})
		}
	}
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			for i := w; i < n; i += 16 {
				ctx, cancel := opCtx()
				_, err := submit(ctx, sprintf(threeDeep, i))
				cancel()
				if err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	testwait.Until(b, 5*time.Minute, "every session to wait on its held call", func() bool { return held.Load() == int64(n) })

	loop := func() *hostloop.Loop { return c.loop }
	b.StartTimer()
	start := time.Now()
	if adoption {
		first.abandon()
		second = c.startPeer("hb")
		loop = func() *hostloop.Loop { return second.loop }
	} else {
		c.killHost(false)
		c.startHost()
	}
	ctx, cancel := opCtx()
	s, err := loop().Submit(ctx, hostloop.Submission{Source: `return await tool.start("it.now", "fresh")`})
	cancel()
	must(b, err)
	testwait.Until(b, time.Minute, "the fresh script", func() bool {
		st, _, err := loop().Status(context.Background(), s.ID)
		return err == nil && st.State == hostloop.SessionCompleted
	})
	ready = time.Since(start)
	if adoption {
		// The lease is what a host waits for before it may adopt.
		start = start.Add(testLease)
	}
	// Resuming is an atomic read; the operations list is the loop's to
	// build, so it is asked for only once nothing is left to resume.
	if adoption {
		// Nothing is adopted until the first host's lease lapses; the
		// operations list is cheap while it is empty.
		testwait.Until(b, time.Minute, "the adoption to begin", func() bool { return liveSessions(loop()) > 0 })
	}
	testwait.Until(b, 10*time.Minute, "every session resumed", func() bool { return loop().Resuming() == 0 })
	live = time.Since(start)
	if got := liveSessions(loop()); got != n {
		b.Fatalf("%d of %d sessions live once every one was resumed", got, n)
	}
	b.StopTimer()
	return ready, live
}

// liveSessions counts the sessions whose held call is live on l.
func liveSessions(l *hostloop.Loop) int {
	ops, err := l.Operations(context.Background())
	if err != nil {
		return -1
	}
	n := 0
	for _, o := range ops {
		if o.Tool == "it.hold" {
			n++
		}
	}
	return n
}

// BenchmarkResumeLongLedger reads back and replays one session whose
// ledger holds n entries (a script of n/2 calls, each prepared and
// answered), as written by n/2 appends and as rewritten whole in one
// message, and reports load-ms and replay-ms.
func BenchmarkResumeLongLedger(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		for _, rewritten := range []bool{false, true} {
			name := fmt.Sprintf("entries=%d/appended", n)
			if rewritten {
				name = fmt.Sprintf("entries=%d/rewritten", n)
			}
			b.Run(name, func(b *testing.B) { longLedger(b, n, rewritten) })
		}
	}
}

func longLedger(b *testing.B, n int, rewritten bool) {
	c := newCluster(b, options{tools: []toolspec.Spec{tool("it.now")}})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	log, err := hostnats.NewLedgerLog(ctx, c.hostNC, c.fcfg, c.key)
	must(b, err)
	calls := n / 2
	src := fmt.Sprintf(`let s = 0; for (let i = 0; i < %d; i++) { s += (await tool.start("it.now", "x")).length } s`, calls)
	entries := ledgerOf(b, c, src, calls)
	const session = "s-h1-0123456789ab-1"
	if rewritten {
		must(b, log.Append(ctx, session, 0, entries[:1]))
		must(b, log.Rewrite(ctx, session, 1, entries))
	} else {
		must(b, log.Append(ctx, session, 0, entries[:1]))
		for i := 1; i < len(entries); i += 2 {
			must(b, log.Append(ctx, session, i, entries[i:min(i+2, len(entries))]))
		}
	}
	var load, replay time.Duration
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		got, err := log.Load(ctx, session)
		must(b, err)
		t1 := time.Now()
		s, err := workflow.Restore(got, workflow.ReplayConfig{Register: c.catalog})
		must(b, err)
		load, replay = load+t1.Sub(t0), replay+time.Since(t1)
		if s.Done() {
			b.Fatalf("the replay ended the script: %v", s.Result())
		}
	}
	b.ReportMetric(float64(load.Milliseconds())/float64(b.N), "load-ms")
	b.ReportMetric(float64(replay.Milliseconds())/float64(b.N), "replay-ms")
}

// ledgerOf runs src in a runtime by hand, answering every call "ok" but
// the last, and returns the ledger a durable host would have written.
func ledgerOf(b *testing.B, c *cluster, src string, calls int) []workflow.Entry {
	clock := host.NewManualClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	seed, nonce := host.RandomSeed{1}, host.NewCapabilitySessionNonce([16]byte{2})
	rt := host.NewRuntime(host.Config{Clock: clock, RandomSeed: &seed, SessionNonce: &nonce, ToolCallBudget: calls + 1, MaxPending: 4})
	must(b, c.catalog(rt))
	res, err := rt.Eval(src)
	must(b, err)
	l := workflow.NewLedger(clock.Now(), workflow.Submitted{Source: src, Nonce: nonce.Bytes(), Seed: seed,
		Tools: rt.ToolDigests(), ToolCallBudget: calls + 1, MaxPending: 4})
	s := workflow.NewSession(workflow.Config{Runtime: rt, First: res, Clock: clock, Ledger: l, RequestID: func() string { return fmt.Sprint("r", rt.CallsUsed()) }})
	for i := range calls {
		ops := s.Claim()
		if len(ops) != 1 {
			b.Fatalf("call %d: %d claimed", i, len(ops))
		}
		if i == calls-1 {
			break
		}
		clock.Advance(time.Millisecond)
		if _, err := s.Answer(ops[0], okResult(ops[0].RequestID), nil); err != nil {
			b.Fatal(err)
		}
	}
	return l.Entries(0)
}

// okResult is a worker's answer "ok" to request.
func okResult(request string) protocol.Result {
	p := protocol.TextPayload("ok")
	return protocol.Result{RequestID: request, Attempt: 1, Status: protocol.ResultSucceeded, Payload: &p}
}

// idempotentTool is tool, declared idempotent.
func idempotentTool(name string) toolspec.Spec {
	s := tool(name)
	s.Idempotent = true
	return s
}
