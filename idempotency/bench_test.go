package idempotency_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/splashfabric/splashfabric/idempotency"
	"github.com/splashfabric/splashfabric/internal/natstest"
)

// The KV benchmarks report writes/op: messages the bucket's stream stored
// per operation, read from its last sequence, so the figure counts exactly
// the JetStream writes the journal needed.

type kvBench struct {
	ctx context.Context
	js  jetstream.JetStream
	j   *idempotency.KVJournal
}

func newKVBench(b *testing.B) *kvBench { return newKVBenchWith(b, idempotency.KVConfig{}) }

func newKVBenchWith(b *testing.B, cfg idempotency.KVConfig) *kvBench {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	b.Cleanup(cancel)
	js := newJetStream(b, natstest.Start(b))
	return &kvBench{ctx: ctx, js: js, j: newKV(b, js, cfg)}
}

func (kb *kvBench) lastSeq(b *testing.B) uint64 {
	s, err := kb.js.Stream(kb.ctx, "KV_"+kb.j.Bucket())
	if err != nil {
		b.Fatal(err)
	}
	info, err := s.Info(kb.ctx)
	if err != nil {
		b.Fatal(err)
	}
	return info.State.LastSeq
}

func (kb *kvBench) reportWrites(b *testing.B, before uint64, ops int) {
	b.ReportMetric(float64(kb.lastSeq(b)-before)/float64(ops), "writes/op")
}

func beginFinish(b *testing.B, ctx context.Context, j idempotency.Journal, key string, renewals int) {
	c, err := j.Begin(ctx, key, "worker-a", time.Minute)
	if err != nil || c.Outcome != idempotency.Fresh {
		b.Fatalf("Begin: %+v, %v", c, err)
	}
	for range renewals {
		if c, err = j.Renew(ctx, c); err != nil {
			b.Fatalf("Renew: %v", err)
		}
	}
	if err := j.Finish(ctx, c, textResult("ok")); err != nil {
		b.Fatalf("Finish: %v", err)
	}
}

func BenchmarkKVBeginFinish(b *testing.B) {
	kb := newKVBench(b)
	before, ops := kb.lastSeq(b), 0
	for b.Loop() {
		beginFinish(b, kb.ctx, kb.j, fmt.Sprintf("op-%d", ops), 0)
		ops++
	}
	kb.reportWrites(b, before, ops)
}

// BenchmarkKVBeginFinishSealed is BenchmarkKVBeginFinish with records
// sealed (KVConfig.Key), as shipped workers run: the difference is the
// cost of record authentication.
func BenchmarkKVBeginFinishSealed(b *testing.B) {
	kb := newKVBenchWith(b, idempotency.KVConfig{Key: testFrameKey})
	before, ops := kb.lastSeq(b), 0
	for b.Loop() {
		beginFinish(b, kb.ctx, kb.j, fmt.Sprintf("op-%d", ops), 0)
		ops++
	}
	kb.reportWrites(b, before, ops)
}

func BenchmarkKVBeginRenewFinish(b *testing.B) {
	kb := newKVBench(b)
	before, ops := kb.lastSeq(b), 0
	for b.Loop() {
		beginFinish(b, kb.ctx, kb.j, fmt.Sprintf("op-%d", ops), 1)
		ops++
	}
	kb.reportWrites(b, before, ops)
}

// BenchmarkKVBeginDone is the duplicate-delivery path: a Begin that finds
// a stored result and replays it.
func BenchmarkKVBeginDone(b *testing.B) {
	kb := newKVBench(b)
	beginFinish(b, kb.ctx, kb.j, "op", 0)
	before, ops := kb.lastSeq(b), 0
	for b.Loop() {
		c, err := kb.j.Begin(kb.ctx, "op", "worker-b", time.Minute)
		if err != nil || c.Outcome != idempotency.Done {
			b.Fatalf("Begin: %+v, %v", c, err)
		}
		ops++
	}
	kb.reportWrites(b, before, ops)
}

// BenchmarkKVStore is the write of an operation run without a claim: one
// create per key.
func BenchmarkKVStore(b *testing.B) {
	kb := newKVBench(b)
	before, ops := kb.lastSeq(b), 0
	for b.Loop() {
		if _, stored, err := kb.j.Store(kb.ctx, fmt.Sprintf("op-%d", ops), "worker-a", textResult("ok")); err != nil || !stored {
			b.Fatalf("Store: %v, %v", stored, err)
		}
		ops++
	}
	kb.reportWrites(b, before, ops)
}

// BenchmarkKVStoreDone is a Store that finds a result stored already and
// returns it: a refused create and a read, no write.
func BenchmarkKVStoreDone(b *testing.B) {
	kb := newKVBench(b)
	if _, _, err := kb.j.Store(kb.ctx, "op", "worker-a", textResult("first")); err != nil {
		b.Fatal(err)
	}
	before, ops := kb.lastSeq(b), 0
	for b.Loop() {
		rec, stored, err := kb.j.Store(kb.ctx, "op", "worker-b", textResult("again"))
		if err != nil || stored || rec.Result.Payload.Text != "first" {
			b.Fatalf("Store: %+v, %v, %v", rec, stored, err)
		}
		ops++
	}
	kb.reportWrites(b, before, ops)
}

// BenchmarkKVBeginFinishParallel runs many operations in flight on one
// connection, as a worker pool does.
func BenchmarkKVBeginFinishParallel(b *testing.B) {
	kb := newKVBench(b)
	var n atomic.Int64
	before := kb.lastSeq(b)
	b.SetParallelism(16)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			beginFinish(b, kb.ctx, kb.j, fmt.Sprintf("op-%d", n.Add(1)), 0)
		}
	})
	kb.reportWrites(b, before, int(n.Load()))
}

func BenchmarkMemoryBeginFinish(b *testing.B) {
	ctx := context.Background()
	m := idempotency.NewMemory(nil)
	ops := 0
	for b.Loop() {
		beginFinish(b, ctx, m, fmt.Sprintf("op-%d", ops), 0)
		ops++
	}
}
