package fabric_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/internal/fabrictest"
	"github.com/splashfabric/splashfabric/protocol"
)

// withHeader returns a copy of m whose header key is set to values (none
// deletes it).
func withHeader(m *nats.Msg, key string, values ...string) *nats.Msg {
	h := nats.Header{}
	for k, v := range m.Header {
		h[k] = append([]string(nil), v...)
	}
	if len(values) == 0 {
		delete(h, key)
	} else {
		h[key] = values
	}
	return &nats.Msg{Header: h, Data: m.Data}
}

// TestOpenRefusesMalformedHeaders: every frame header must be there once,
// within its bound and in its one spelling, and the body within the frame
// limit, before any MAC is computed.
func TestOpenRefusesMalformedHeaders(t *testing.T) {
	c := fabrictest.NewCodec(t, fabrictest.Key)
	good, err := c.SealInvoke(fabrictest.Invoke("req-1", 1))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.OpenInvoke(good.Header, good.Data); err != nil {
		t.Fatalf("good frame: %v", err)
	}
	tag := good.Header.Get(fabric.HeaderTag)
	tests := []struct {
		name    string
		m       *nats.Msg
		wantErr error
	}{
		{"no session", withHeader(good, fabric.HeaderSession), protocol.ErrMalformedFrame},
		{"two sessions", withHeader(good, fabric.HeaderSession, "req-1", "req-1"), protocol.ErrMalformedFrame},
		{"long session", withHeader(good, fabric.HeaderSession, strings.Repeat("r", protocol.MaxSessionIDBytes+1)), protocol.ErrMalformedFrame},
		{"no role", withHeader(good, fabric.HeaderRole), protocol.ErrMalformedFrame},
		{"unknown role", withHeader(good, fabric.HeaderRole, "hosts"), protocol.ErrWrongRole},
		{"worker role", withHeader(good, fabric.HeaderRole, "worker"), protocol.ErrWrongRole},
		{"no seq", withHeader(good, fabric.HeaderSeq), protocol.ErrMalformedFrame},
		{"seq with a leading zero", withHeader(good, fabric.HeaderSeq, "01"), protocol.ErrMalformedFrame},
		{"seq zero", withHeader(good, fabric.HeaderSeq, "0"), protocol.ErrMalformedFrame},
		{"signed seq", withHeader(good, fabric.HeaderSeq, "+1"), protocol.ErrMalformedFrame},
		{"seq past uint64", withHeader(good, fabric.HeaderSeq, "18446744073709551616"), protocol.ErrMalformedFrame},
		{"other seq", withHeader(good, fabric.HeaderSeq, "3"), protocol.ErrBadTag},
		{"no tag", withHeader(good, fabric.HeaderTag), protocol.ErrMalformedFrame},
		{"uppercase tag", withHeader(good, fabric.HeaderTag, strings.ToUpper(tag)), protocol.ErrMalformedFrame},
		{"short tag", withHeader(good, fabric.HeaderTag, tag[2:]), protocol.ErrMalformedFrame},
		{"body not an object", &nats.Msg{Header: good.Header, Data: []byte(`"x"`)}, protocol.ErrMalformedFrame},
		{"body too large", &nats.Msg{Header: good.Header, Data: bytes.Repeat([]byte{' '}, protocol.DefaultMaxFrameBytes+1)}, protocol.ErrFrameTooLarge},
		{"body with a space more", &nats.Msg{Header: good.Header, Data: append(bytes.Clone(good.Data), ' ')}, protocol.ErrBadTag},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.OpenInvoke(tt.m.Header, tt.m.Data)
			fabrictest.WantErrIs(t, err, fabric.ErrForged, tt.wantErr)
		})
	}
}

// TestSealRefusesSessionsHeadersCannotCarry: NATS headers end at a line
// break and lose leading blanks, so such a session id is refused at
// sealing instead of failing at the other end.
func TestSealRefusesSessionsHeadersCannotCarry(t *testing.T) {
	c := fabrictest.NewCodec(t, fabrictest.Key)
	for _, id := range []string{"req\n1", "req\r1", "req\x001", " req-1", "\treq-1", "req\x7f"} {
		_, err := c.SealInvoke(fabrictest.Invoke(id, 1))
		fabrictest.WantErrIs(t, err, protocol.ErrInvalidSession)
	}
}

// TestFrameHeadersSurviveTheServer sends a sealed frame through a real
// server: headers and body arrive as sealed and the frame opens.
func TestFrameHeadersSurviveTheServer(t *testing.T) {
	env := fabrictest.NewEnv(t)
	c := fabrictest.NewCodec(t, fabrictest.Key)
	sub, err := env.NC.SubscribeSync("wire.test")
	if err != nil {
		t.Fatal(err)
	}
	inv := fabrictest.Invoke("01JD8Y3ZK4R6W2N9Q5T7V0X1C3 é", 2)
	inv.Input = protocol.TextPayload("line one\nline <two> \"quoted\" \u2028")
	m, err := c.SealInvoke(inv)
	if err != nil {
		t.Fatal(err)
	}
	m.Subject = "wire.test"
	if err := env.NC.PublishMsg(m); err != nil {
		t.Fatal(err)
	}
	got, err := sub.NextMsgWithContext(fabrictest.Ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	back, err := c.OpenInvoke(got.Header, got.Data)
	if err != nil || back.Input.Text != inv.Input.Text || back.RequestID != inv.RequestID {
		t.Fatalf("OpenInvoke = %+v, %v", back, err)
	}
}

// TestCancelRecordRoundTrip: a cancel record, which a KV value carries
// without headers, is one JSON line and opens only as a cancel record.
func TestCancelRecordRoundTrip(t *testing.T) {
	c := fabrictest.NewCodec(t, fabrictest.Key)
	cancel := protocol.Cancel{RequestID: "req-1", Tool: "t", Attempt: 2, IdempotencyKey: "k"}
	data, err := c.SealCancelRecord(cancel)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := c.OpenCancelRecord(data); err != nil || got != cancel {
		t.Fatalf("OpenCancelRecord = %+v, %v", got, err)
	}
	if _, err := fabrictest.NewCodec(t, fabrictest.OtherKey).OpenCancelRecord(data); err == nil {
		t.Fatal("a record opened under another key")
	}
	_, err = c.OpenCancelRecord(append([]byte(c.KeyID()+" "), bytes.Repeat([]byte{'{'}, protocol.DefaultMaxFrameBytes+1)...))
	fabrictest.WantErrIs(t, err, fabric.ErrForged, protocol.ErrFrameTooLarge)
	_, err = c.OpenCancelRecord(bytes.Repeat([]byte{' '}, protocol.DefaultMaxFrameBytes+protocol.MaxKeyIDBytes+3))
	fabrictest.WantErrIs(t, err, fabric.ErrForged, protocol.ErrFrameTooLarge)
	inv, err := c.SealInvoke(fabrictest.Invoke("req-1", 1))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.OpenCancelRecord(inv.Data)
	fabrictest.WantErrIs(t, err, fabric.ErrForged, protocol.ErrMalformedFrame)
}
