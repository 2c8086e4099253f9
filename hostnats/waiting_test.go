package hostnats_test

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/internal/fabrictest"
	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/protocol"
)

// TestWaitingTellsQueuedFromDelivered publishes three invocations with no
// worker pulling, hands the first to a consumer, has a worker stream a
// chunk of the third, and expects only the second still to be waiting.
func TestWaitingTellsQueuedFromDelivered(t *testing.T) {
	env := fabrictest.NewEnv(t)
	tr := newTransport(t, env, "h1")
	ids := []string{"req-1", "req-2", "req-3"}
	waiting := func() []string {
		got, err := tr.Waiting(fabrictest.Ctx(t), ids)
		if err != nil {
			t.Fatal(err)
		}
		return slices.Sorted(maps.Keys(got))
	}
	for _, id := range ids {
		if err := tr.Publish(fabrictest.Ctx(t), fabrictest.Invoke(id, 1)); err != nil {
			t.Fatal(err)
		}
	}
	// No pool consumer exists yet: nothing can have been delivered.
	if got := waiting(); !slices.Equal(got, ids) {
		t.Fatalf("waiting before any pool = %v, want %v", got, ids)
	}
	cons, err := fabric.EnsureToolConsumer(fabrictest.Ctx(t), env.JS, env.Cfg, "text.remote")
	if err != nil {
		t.Fatal(err)
	}
	if got := waiting(); !slices.Equal(got, ids) {
		t.Fatalf("waiting with an idle pool = %v, want %v", got, ids)
	}
	// Publishes are acknowledged asynchronously.
	testwait.Until(t, 0, "three invocations pending", func() bool {
		p, ok, err := tr.PoolState(fabrictest.Ctx(t), "text.remote")
		if err != nil || !ok {
			t.Fatalf("PoolState: ok %v, %v", ok, err)
		}
		return p.Pending == 3 && p.AckPending == 0
	})
	if _, ok, err := tr.PoolState(fabrictest.Ctx(t), "text.other"); err != nil || ok {
		t.Fatalf("PoolState of a tool without a pool: ok %v, %v", ok, err)
	}
	m, err := cons.Next(jetstream.FetchMaxWait(10 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Headers().Get(fabric.HeaderMsgID); got != "key-req-1/1" {
		t.Fatalf("delivered %q first", got)
	}
	testwait.Until(t, 0, "req-1 delivered", func() bool { return slices.Equal(waiting(), ids[1:]) })
	if p, _, err := tr.PoolState(fabrictest.Ctx(t), "text.remote"); err != nil || p.Pending != 2 || p.AckPending != 1 {
		t.Fatalf("PoolState after one delivery = %+v, %v; want 2 pending, 1 ack pending", p, err)
	}

	data, err := fabrictest.NewCodec(t, fabrictest.Key).SealWorker("req-3", 1, 1, protocol.ChunkMessage(protocol.Chunk{RequestID: "req-3", Sequence: 1, Text: "c"}))
	if err != nil {
		t.Fatal(err)
	}
	publishEvent(t, env, "h1", fabrictest.NewCodec(t, fabrictest.Key).ChunkMsgID("req-3", 1, 1), data)
	testwait.Receive(t, 0, "chunk", tr.Events())
	if got := waiting(); !slices.Equal(got, []string{"req-2"}) {
		t.Fatalf("waiting after req-3's chunk = %v, want [req-2]", got)
	}
	// A request this transport did not publish (an earlier process's,
	// resumed) is not its to judge.
	if got, err := tr.Waiting(fabrictest.Ctx(t), []string{"req-9"}); err != nil || got["req-9"] {
		t.Fatalf("Waiting(req-9) = %v, %v; want it not reported", got, err)
	}
}
