package fabric_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"strconv"
	"testing"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/internal/fabrictest"
	"github.com/splashfabric/splashfabric/protocol"
)

// BenchmarkAnswerPath measures the authentication work of one operation
// (no chunks), both ends: the host seals the invocation, the worker opens
// it, seals its result and names its message id, the host opens the
// result. Sub-benchmarks, to be compared in one run as ratios:
//
//   - shared_key: one key for host and every worker, as before pools and
//     rings: one codec, a plain message id;
//   - pool_keys: what a host and a pool do now: the host finds the tool's
//     pool among eight and its codec, every frame names its key in a ring
//     of two (current and retired), the answer names its tool, checked
//     against its subject, and its message id carries a keyed tag;
//   - ed25519_answers: pool_keys with the answer signed by the pool's
//     ed25519 key and verified by the host, the alternative the decision
//     record 0141 weighs.
func BenchmarkAnswerPath(b *testing.B) {
	inv := protocol.Invoke{
		RequestID: "h1-0123456789ab-1", Tool: "demo.sleep", Input: protocol.TextPayload("200ms"),
		CallIndex: 1, Attempt: 1, AttemptLimit: 1, IdempotencyKey: "sk1-00112233445566778899aabbccddeeff-1", OutputLimit: 1 << 20,
	}
	payload := protocol.TextPayload("slept 200ms")
	result := protocol.ResultMessage(protocol.Result{RequestID: inv.RequestID, Attempt: 1, Status: protocol.ResultSucceeded, Payload: &payload})

	b.Run("shared_key", func(b *testing.B) {
		c := fabrictest.NewCodec(b, fabrictest.Key)
		b.ReportAllocs()
		for b.Loop() {
			m, err := c.SealInvoke(inv)
			if err != nil {
				b.Fatal(err)
			}
			got, err := c.OpenInvoke(m.Header, m.Data)
			if err != nil {
				b.Fatal(err)
			}
			r, err := c.SealWorker(got.RequestID, got.Attempt, 1, result)
			if err != nil {
				b.Fatal(err)
			}
			r.Header.Set(fabric.HeaderMsgID, "r/"+got.RequestID+"/"+strconv.FormatUint(uint64(got.Attempt), 10)+"/result")
			if _, _, err := c.OpenWorker(r.Header, r.Data); err != nil {
				b.Fatal(err)
			}
		}
	})

	// Eight pools, each with a ring of two, and the pool of the tool.
	rings := map[string]protocol.Keys{}
	poolOf := map[string]string{}
	var worker *fabric.Codec
	for i := range 8 {
		name := "pool" + strconv.Itoa(i)
		old, _ := protocol.GenerateSessionKey(nil)
		cur, _ := protocol.GenerateSessionKey(nil)
		ring, err := old.Ring().Rotate(cur)
		if err != nil {
			b.Fatal(err)
		}
		rings[name] = ring
		poolOf["tool"+strconv.Itoa(i)] = name
		if i == 3 {
			worker = fabrictest.NewCodec(b, ring)
		}
	}
	poolOf[inv.Tool] = "pool3"
	host, err := fabric.NewPoolCodecs(fabrictest.Key, rings, func(tool string) string { return poolOf[tool] })
	if err != nil {
		b.Fatal(err)
	}
	subject := fabric.EventsSubject("h1", inv.Tool)
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	poolPath := func(b *testing.B, signed bool) {
		b.ReportAllocs()
		for b.Loop() {
			m, err := host.ForTool(inv.Tool).SealInvoke(inv)
			if err != nil {
				b.Fatal(err)
			}
			got, err := worker.OpenInvoke(m.Header, m.Data)
			if err != nil {
				b.Fatal(err)
			}
			r, err := worker.SealWorker(got.RequestID, got.Attempt, 1, result)
			if err != nil {
				b.Fatal(err)
			}
			r.Header.Set(fabric.HeaderTool, got.Tool)
			r.Header.Set(fabric.HeaderMsgID, worker.EventMsgID(got.RequestID, got.Attempt, protocol.KindResult))
			var sig []byte
			if signed {
				sig = ed25519.Sign(priv, r.Data)
			}
			tool := r.Header.Get(fabric.HeaderTool)
			if _, token, ok := fabric.ParseEventSubject(subject); !ok || fabric.ToolToken(tool) != token {
				b.Fatal("subject")
			}
			if _, _, err := host.ForTool(tool).OpenWorker(r.Header, r.Data); err != nil {
				b.Fatal(err)
			}
			if signed && !ed25519.Verify(pub, r.Data, sig) {
				b.Fatal("signature")
			}
		}
	}
	b.Run("pool_keys", func(b *testing.B) { poolPath(b, false) })
	b.Run("ed25519_answers", func(b *testing.B) { poolPath(b, true) })
}
