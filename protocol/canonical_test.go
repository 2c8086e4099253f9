package protocol_test

import (
	"testing"

	"github.com/splashfabric/splashfabric/protocol"
)

// TestTagFollowsTheCanonicalEncoding pins the MAC input to the layout in the
// package documentation, computed here with crypto/hmac directly, so another
// implementation can interoperate from the documentation alone.
func TestTagFollowsTheCanonicalEncoding(t *testing.T) {
	for _, role := range []protocol.SessionRole{protocol.RoleHost, protocol.RoleWorker} {
		for _, seq := range []uint64{1, 2, 1<<32 | 1, ^uint64(0)} {
			f, err := protocol.SealFrame(testKey, "worker-1", role, seq, protocol.ReconcileMessage(validReconcile()))
			if err != nil {
				t.Fatal(err)
			}
			if want := specTag(testKeyBytes, "worker-1", role, seq, f.Message); f.Tag != want {
				t.Fatalf("role %s seq %d: tag %s, want %s", role, seq, f.Tag, want)
			}
		}
	}
}

// TestTagVector is a fixed test vector: key of 32 bytes of 7, session
// "worker-1", host, seq 1, and the message bytes below; the tag was computed
// by a separate implementation (Python hmac) from the documented layout.
func TestTagVector(t *testing.T) {
	const msg = `{"kind":"reconcile_operation","reconcile_operation":{"session_id":"worker-1","request_id":"reconcile-1","tool":"text.remote","operation_key":"op-key"}}`
	const want = "6015413d15f3463034fd115e3c1f67452b8f4f8ac0d98652cae747fbe6169bcd"
	f, err := protocol.SealFrame(testKey, "worker-1", protocol.RoleHost, 1, protocol.ReconcileMessage(validReconcile()))
	if err != nil {
		t.Fatal(err)
	}
	if string(f.Message) != msg {
		t.Fatalf("message encoding changed: %s", f.Message)
	}
	if f.Tag != want {
		t.Fatalf("tag %s, want %s", f.Tag, want)
	}
}

// Length prefixes keep a byte from moving between the session id and the
// message without changing the tag.
func TestTagSeparatesFields(t *testing.T) {
	a := specTag(testKeyBytes, "ab", protocol.RoleHost, 1, []byte("{}"))
	b := specTag(testKeyBytes, "a", protocol.RoleHost, 1, []byte("b{}"))
	if a == b {
		t.Fatal("length prefixes do not separate fields")
	}
}
