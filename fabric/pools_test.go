package fabric_test

import (
	"errors"
	"testing"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/internal/fabrictest"
	"github.com/splashfabric/splashfabric/protocol"
)

func TestPoolNames(t *testing.T) {
	if got := fabric.JournalBucket(""); got != "splash_idempotency" {
		t.Errorf("JournalBucket(\"\") = %q", got)
	}
	if got := fabric.JournalBucket("demo"); got != "splash_idempotency_pool_demo" {
		t.Errorf("JournalBucket(demo) = %q", got)
	}
	if got := fabric.InboxPrefix(fabric.PoolIdentity("demo.upper")); got != "_INBOX_pool_demo_upper" {
		t.Errorf("InboxPrefix = %q", got)
	}
	// Injective where dots and underscores would otherwise meet.
	if fabric.PoolToken("a.b") == fabric.PoolToken("a_b") || fabric.CancelKey("a.b", "r") == fabric.CancelKey("a_b", "r") {
		t.Error("two pools share a token")
	}
	if got, want := fabric.CancelKey("demo", "r"), fabric.CancelKeys("demo"); got[:len(want)-1] != want[:len(want)-1] {
		t.Errorf("CancelKey %q is not matched by CancelKeys %q", got, want)
	}
}

// Each tool's frames are sealed under its pool's ring when the pool has
// one, under the shared ring otherwise; a frame one pool sealed does not
// open under another's.
func TestPoolCodecs(t *testing.T) {
	poolOf := map[string]string{"demo.upper": "text", "demo.echo": "demo"}
	pc, err := fabric.NewPoolCodecs(fabrictest.Key, map[string]protocol.Keys{"text": fabrictest.OtherKey}, func(tool string) string { return poolOf[tool] })
	if err != nil {
		t.Fatal(err)
	}
	if pc.Pool("demo.upper") != "text" || pc.Pool("lone.tool") != "lone.tool" {
		t.Fatalf("pools %q, %q", pc.Pool("demo.upper"), pc.Pool("lone.tool"))
	}
	if pc.ForTool("demo.upper").KeyID() != protocol.KeyIDOf(fabrictest.OtherKey) || pc.ForTool("demo.echo").KeyID() != protocol.KeyIDOf(fabrictest.Key) {
		t.Fatal("a tool's frames are not sealed under its pool's ring")
	}
	m, err := pc.ForTool("demo.upper").SealWorker("r", 1, 1, protocol.ResultMessage(fabrictest.Result("r", 1)))
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = pc.ForTool("demo.echo").OpenWorker(m.Header, m.Data)
	fabrictest.WantErrIs(t, err, fabric.ErrForged, fabric.ErrUnknownKey)
	if !pc.Own("text") || pc.Own("demo") {
		t.Fatal("Own")
	}
	if _, err := fabric.NewPoolCodecs(fabrictest.Key, map[string]protocol.Keys{"bad pool": fabrictest.OtherKey}, nil); !errors.Is(err, protocol.ErrInvalidKey) {
		t.Fatalf("an illegal pool name: %v", err)
	}
	if _, err := fabric.NewPoolCodecs(fabrictest.Key, map[string]protocol.Keys{"p": protocol.SessionKey{}}, nil); !errors.Is(err, protocol.ErrInvalidKey) {
		t.Fatalf("a zero ring: %v", err)
	}
}

// Event message ids are deterministic for one ring, so a republish is
// deduplicated, and differ under another ring, so no pool can take the
// id of another pool's answer.
func TestEventMsgIDsAreKeyed(t *testing.T) {
	a, b := fabrictest.NewCodec(t, fabrictest.Key), fabrictest.NewCodec(t, fabrictest.OtherKey)
	id := a.EventMsgID("r1", 1, protocol.KindResult)
	if id != a.EventMsgID("r1", 1, protocol.KindResult) {
		t.Fatal("an event's id changed")
	}
	if id == b.EventMsgID("r1", 1, protocol.KindResult) {
		t.Fatal("two rings give an event the same id")
	}
	if id == a.ChunkMsgID("r1", 1, 1) || id == a.EventMsgID("r1", 2, protocol.KindResult) {
		t.Fatal("distinct events share an id")
	}
}
