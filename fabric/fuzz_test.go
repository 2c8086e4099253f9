package fabric_test

import (
	"errors"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/internal/fabrictest"
	"github.com/splashfabric/splashfabric/protocol"
)

// FuzzOpenWorker feeds arbitrary frame headers and bodies to the host's
// side of the codec: it never panics, every refusal wraps ErrForged, and
// whatever it accepts is a valid worker event bound to the frame's
// session.
func FuzzOpenWorker(f *testing.F) {
	c := fabrictest.NewCodec(f, fabrictest.Key)
	for k, msg := range []protocol.WorkerMessage{
		protocol.ChunkMessage(protocol.Chunk{RequestID: "req-1", Sequence: 1, Text: "c"}),
		protocol.ResultMessage(fabrictest.Result("req-1", 2)),
	} {
		m, err := c.SealWorker("req-1", 2, uint32(k+1), msg)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(m.Header.Get(fabric.HeaderSession), m.Header.Get(fabric.HeaderRole), m.Header.Get(fabric.HeaderSeq), m.Header.Get(fabric.HeaderTag), m.Data)
	}
	f.Add("", "", "", "", []byte("{}"))
	f.Fuzz(func(t *testing.T, session, role, seq, tag string, body []byte) {
		h := nats.Header{}
		for k, v := range map[string]string{fabric.HeaderSession: session, fabric.HeaderRole: role, fabric.HeaderSeq: seq, fabric.HeaderTag: tag} {
			if v != "" {
				h.Set(k, v)
			}
		}
		msg, _, err := c.OpenWorker(h, body)
		if err != nil {
			if !errors.Is(err, fabric.ErrForged) {
				t.Fatalf("refusal without ErrForged: %v", err)
			}
			return
		}
		req, _, err := msg.WorkerBinding()
		if err != nil || req != session || msg.Validate() != nil {
			t.Fatalf("accepted %+v for session %q (%v)", msg, session, err)
		}
	})
}
