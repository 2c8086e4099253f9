package itest

import (
	"strconv"
	"testing"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/idempotency"
	"github.com/splashfabric/splashfabric/internal/benchharness"
	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/internal/tooltest"
	"github.com/splashfabric/splashfabric/toolspec"
	"github.com/splashfabric/splashfabric/workeragent"
)

// The end-to-end benchmark and, in the same run, the two raw JetStream
// baselines (no runtime, no journal, no authentication) of
// internal/benchharness. Every runner of this file goes through that
// harness with the same options, so every figure is measured the same way.
//
// The harness submits from several goroutines here: a script's first step
// is evaluated on the submitting goroutine (as it is for concurrent API
// callers), so one submitter alone would measure how fast one goroutine
// evaluates scripts, not whether the path keeps its in-flight operations
// moving. CPU per operation is reported as well.
//
//	go test -run '^$' -bench . -benchtime 3000x ./internal/itest/

// submitters bounds the goroutines that submit operations.
const submitters = 4

func benchMatrix(b *testing.B, mk benchharness.NewRunner) {
	benchharness.Matrix(b, mk, benchharness.Submitters(submitters), benchharness.ReportCPU())
}

// BenchmarkEndToEnd is the whole path (see benchharness.Fabric): one
// script session per operation, the tool registered as idempotent, so the
// worker takes the journal's fast path. It includes creating a runtime and
// a script VM per operation: a per-operation cost a real submission pays
// too.
func BenchmarkEndToEnd(b *testing.B) {
	benchMatrix(b, benchharness.Fabric(benchharness.FabricOptions{Idempotent: true}))
}

// BenchmarkEndToEndClaimed is BenchmarkEndToEnd with a tool that is not
// idempotent: every call is claimed in the journal before it runs, which
// is what makes a crash mid-call indeterminate instead of a second effect.
func BenchmarkEndToEndClaimed(b *testing.B) {
	benchMatrix(b, benchharness.Fabric(benchharness.FabricOptions{}))
}

// BenchmarkEndToEndArchived is BenchmarkEndToEndClaimed with the session
// archive, as `splash host` runs without ledgers: the baseline of
// BenchmarkEndToEndDurable.
func BenchmarkEndToEndArchived(b *testing.B) {
	benchMatrix(b, benchharness.Fabric(benchharness.FabricOptions{Archive: true}))
}

// BenchmarkEndToEndDurable is BenchmarkEndToEndArchived on a durable host:
// each session's ledger is written before its call is published, and
// removed once its outcome is archived. A durable Submit returns only once
// that first write is stored, so every operation in flight is submitted
// from its own goroutine, as splash bench's durable row is: with four
// submitters the bound was four writes' round trips, not the path.
func BenchmarkEndToEndDurable(b *testing.B) {
	benchharness.Matrix(b, benchharness.Fabric(benchharness.FabricOptions{Durable: true}), benchharness.SubmitEach(), benchharness.ReportCPU())
}

// BenchmarkEndToEndDurableUnbatched is BenchmarkEndToEndDurable with
// every ledger write stored on its own: the baseline of batching a loop
// step's appends into one atomic JetStream batch.
func BenchmarkEndToEndDurableUnbatched(b *testing.B) {
	benchharness.Matrix(b, benchharness.Fabric(benchharness.FabricOptions{Durable: true, Unbatched: true}), benchharness.SubmitEach(), benchharness.ReportCPU())
}

// BenchmarkBaselineCoreReply is baseline (a): publish to a work-queue
// stream, pull, reply on core NATS, plain ack.
func BenchmarkBaselineCoreReply(b *testing.B) { benchMatrix(b, benchharness.CoreReply) }

// BenchmarkBaselineDurableReply is baseline (b): as (a), but the reply is
// JetStream-published (async) to a results stream the host consumes, and
// the job is acked once the reply is stored.
func BenchmarkBaselineDurableReply(b *testing.B) { benchMatrix(b, benchharness.DurableReply) }

// TestJetStreamWritesPerOperation counts the stream writes one successful
// operation costs, from the sequence deltas of every stream it touches:
// the invocation (SPLASH_INVOKE), the terminal event (SPLASH_EVENTS) and
// the journal (KV_splash_idempotency): a claim and the result for a tool
// that is not idempotent, nothing for one that is, whose terminal event,
// stored on its operation's answer subject, is its record. A cancel-free
// call writes no cancel record. Acks update consumer state, not streams,
// so they do not show here.
//
// A durable host adds its session ledger (SPLASH_LEDGER): one append per
// step that prepared an operation, holding the answer the step applied
// and the operation it prepared next, so one write per operation; the
// step that ends the session writes nothing to it. Once the archive
// (KV_splash_sessions) holds the outcome, one record per session, the
// ledger is removed by one more message per session, a tombstone that
// rolls the subject up and then expires.
func TestJetStreamWritesPerOperation(t *testing.T) {
	const sessions = 20
	for _, tc := range []struct {
		name       string
		idempotent bool
		durable    bool
		calls      int
		journal    uint64
	}{
		{"claimed", false, false, 1, 2},
		{"idempotent", true, false, 1, 0},
		{"claimed, durable", false, true, 1, 2},
		{"claimed, durable, five calls a session", false, true, 5, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			noop := tool("bench.noop")
			noop.Idempotent = tc.idempotent
			c := newCluster(t, options{tools: []toolspec.Spec{noop}, durable: tc.durable})
			c.startWorker("w1", func(a *workeragent.Agent) {
				must(t, a.HandleTool(c.tool("bench.noop"), workeragent.HandlerFunc(echo)))
			})
			ops := uint64(sessions * tc.calls)
			var ledger, archive uint64
			if tc.durable {
				ledger, archive = ops+sessions, sessions
			}
			// slack is how many more writes than want a stream may take.
			// A slice that gives way at its quantum (a busy machine) ends
			// its step after the answer's ledger entry and before the
			// next operation's: two entries where one holds both. A few
			// more, never fewer.
			streams := []struct {
				name        string
				want, slack uint64
			}{
				{fabric.StreamInvoke, ops, 0},
				{fabric.StreamEvents, ops, 0},
				{"KV_" + idempotency.BucketName, tc.journal * ops, 0},
				{"KV_" + fabric.BucketCancel, 0, 0},
				{fabric.StreamLedger, ledger, ops / 10},
				{"KV_" + fabric.BucketSessions, archive, 0},
			}
			before := make([]uint64, len(streams))
			for i, s := range streams {
				before[i] = c.streamSeq(s.name)
			}
			for i := range sessions {
				src := sprintf(`let r; for (let k = 0; k < %d; k++) { r = await tool.start("bench.noop", "%d"); } r`, tc.calls, i)
				wantCompleted(t, c.wait(c.submit(src), 0), strconv.Itoa(i))
			}
			if tc.durable {
				// The outcome is archived and the ledger removed after
				// the session ended, off the loop.
				testwait.Until(t, 0, "every ledger removed", func() bool {
					ctx, cancel := opCtx()
					defer cancel()
					left, err := c.gate.Sessions(ctx)
					return err == nil && len(left) == 0
				})
			}
			var total uint64
			for i, s := range streams {
				delta := c.streamSeq(s.name) - before[i]
				total += delta
				t.Logf("%s: %d writes for %d operations", s.name, delta, ops)
				if delta < s.want || delta > s.want+s.slack {
					t.Errorf("%s: %d writes for %d operations, want %d", s.name, delta, ops, s.want)
				}
			}
			t.Logf("%.2f writes per operation", float64(total)/float64(ops))
		})
	}
}

// BenchmarkSessionOnly is the host-side share of BenchmarkEndToEnd without
// NATS: a fresh runtime with the catalog, the script's Eval, claim and
// completion, as the loop does once per submitted script.
func BenchmarkSessionOnly(b *testing.B) {
	c := &cluster{tools: tooltest.Set(b, tool("bench.noop"))}
	b.ReportAllocs()
	for b.Loop() {
		rt := host.NewRuntime(host.Config{})
		must(b, c.catalog(rt))
		res, err := rt.Eval(benchharness.NoopScript)
		if err != nil || !res.Suspended {
			b.Fatalf("Eval: %+v, %v", res, err)
		}
		inv, _ := rt.ClaimNextExternalTool()
		if res, err := rt.CompleteExternalTool(inv.ID, host.Ok("1")); err != nil || !res.Completed() {
			b.Fatalf("complete: %+v, %v", res, err)
		}
	}
}
