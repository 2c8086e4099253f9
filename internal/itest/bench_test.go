package itest

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/idempotency"
	"github.com/splashfabric/splashfabric/internal/benchharness"
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

// BenchmarkEndToEnd is the whole path: each operation is one script
// session, `await tool.start("bench.noop", id)`, submitted through
// Loop.Submit; the loop claims and publishes the sealed invocation, a
// worker agent pulls it, consults its KV journal, runs a no-op handler,
// stores the result and publishes the sealed terminal event; the host
// transport verifies it and the loop completes the script. Completion is
// observed through the loop's Observer. It therefore includes creating a
// runtime and a script VM per operation: a per-operation cost a real
// submission pays too.
func BenchmarkEndToEnd(b *testing.B) { benchMatrix(b, newFabricRunner) }

// BenchmarkBaselineCoreReply is baseline (a): publish to a work-queue
// stream, pull, reply on core NATS, plain ack.
func BenchmarkBaselineCoreReply(b *testing.B) { benchMatrix(b, benchharness.CoreReply) }

// BenchmarkBaselineDurableReply is baseline (b): as (a), but the reply is
// JetStream-published (async) to a results stream the host consumes, and
// the job is acked once the reply is stored.
func BenchmarkBaselineDurableReply(b *testing.B) { benchMatrix(b, benchharness.DurableReply) }

type fabricRunner struct {
	c *cluster
}

func newFabricRunner(b *testing.B, workers int, complete func(uint64)) benchharness.RoundTripper {
	c := newCluster(b, options{tools: []hostTool{tool("bench.noop")}, eventBuffer: 4096})
	c.obs.onFinal = func(s host.SessionStatus) {
		if id, err := strconv.ParseUint(s.Value, 10, 64); err == nil && s.State == host.SessionCompleted {
			complete(id)
		}
	}
	for i := range workers {
		c.startWorker(fmt.Sprintf("w%d", i+1), func(a *workeragent.Agent) {
			must(b, a.Handle("bench.noop", workeragent.HandlerFunc(echo), workeragent.Concurrency(256)))
		})
	}
	return &fabricRunner{c: c}
}

func (r *fabricRunner) Submit(id uint64) error {
	_, err := r.c.loop.Submit(context.Background(), host.Submission{
		Source: `const r = await tool.start("bench.noop", "` + strconv.FormatUint(id, 10) + `"); r`,
	})
	return err
}

// Close leaves teardown to the cluster's cleanups.
func (r *fabricRunner) Close() {}

// TestJetStreamWritesPerOperation counts the stream writes one successful
// operation costs, from the sequence deltas of every stream it touches:
// the invocation (SPLASH_INVOKE), the terminal event (SPLASH_EVENTS) and
// the journal's claim and result (KV_splash_idempotency). A cancel-free
// call writes no cancel record. Acks update consumer state, not streams,
// so they do not show here.
func TestJetStreamWritesPerOperation(t *testing.T) {
	const ops = 20
	c := newCluster(t, options{tools: []hostTool{tool("bench.noop")}})
	c.startWorker("w1", func(a *workeragent.Agent) { must(t, a.Handle("bench.noop", workeragent.HandlerFunc(echo))) })
	streams := []struct {
		name string
		want uint64
	}{
		{fabric.StreamInvoke, 1},
		{fabric.StreamEvents, 1},
		{"KV_" + idempotency.BucketName, 2},
		{"KV_" + fabric.BucketCancel, 0},
	}
	before := make([]uint64, len(streams))
	for i, s := range streams {
		before[i] = c.streamSeq(s.name)
	}
	for i := range ops {
		wantCompleted(t, c.wait(c.submit(sprintf(`const r = await tool.start("bench.noop", "%d"); r`, i)), 0), strconv.Itoa(i))
	}
	for i, s := range streams {
		delta := c.streamSeq(s.name) - before[i]
		t.Logf("%s: %d writes for %d operations", s.name, delta, ops)
		if delta != s.want*ops {
			t.Errorf("%s: %d writes for %d operations, want %d each", s.name, delta, ops, s.want)
		}
	}
}

// BenchmarkSessionOnly is the host-side share of BenchmarkEndToEnd without
// NATS: a fresh runtime with the catalog, the script's Eval, claim and
// completion, as the loop does once per submitted script.
func BenchmarkSessionOnly(b *testing.B) {
	c := &cluster{opts: options{tools: []hostTool{tool("bench.noop")}}}
	b.ReportAllocs()
	for b.Loop() {
		rt := host.NewRuntime(host.Config{})
		must(b, c.catalog(rt))
		res, err := rt.Eval(`const r = await tool.start("bench.noop", "1"); r`)
		if err != nil || !res.Suspended {
			b.Fatalf("Eval: %+v, %v", res, err)
		}
		inv, _ := rt.ClaimNextExternalTool()
		if res, err := rt.CompleteExternalTool(inv.ID, host.Ok("1")); err != nil || !res.Completed() {
			b.Fatalf("complete: %+v, %v", res, err)
		}
	}
}
