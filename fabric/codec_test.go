package fabric_test

import (
	"sync"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/internal/fabrictest"
	"github.com/splashfabric/splashfabric/protocol"
)

func TestCodecRoundTrips(t *testing.T) {
	c := fabrictest.NewCodec(t, fabrictest.Key)
	inv := fabrictest.Invoke("req-1", 2)
	data, err := c.SealInvoke(inv)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.OpenInvoke(data.Header, data.Data)
	if err != nil {
		t.Fatal(err)
	}
	if got.RequestID != inv.RequestID || got.Attempt != 2 || got.Input.Text != "hello" {
		t.Fatalf("OpenInvoke = %+v", got)
	}

	cancel := protocol.Cancel{RequestID: "req-1", Tool: "text.remote", Attempt: 2, IdempotencyKey: "key-req-1"}
	data, err = c.SealCancel(cancel)
	if err != nil {
		t.Fatal(err)
	}
	if gotC, err := c.OpenCancel(data.Header, data.Data); err != nil || gotC != cancel {
		t.Fatalf("OpenCancel = %+v, %v", gotC, err)
	}

	msgs := []protocol.WorkerMessage{
		protocol.ChunkMessage(protocol.Chunk{RequestID: "req-1", Sequence: 1, Text: "x"}),
		protocol.ResultMessage(fabrictest.Result("req-1", 2)),
		protocol.CancelReplyMessage(protocol.CancelReply{RequestID: "req-1", Attempt: 2, Disposition: protocol.CancelTooLate}),
	}
	for i, m := range msgs {
		data, err := c.SealWorker("req-1", 2, uint32(i+1), m)
		if err != nil {
			t.Fatal(err)
		}
		got, seq, err := c.OpenWorker(data.Header, data.Data)
		if err != nil {
			t.Fatal(err)
		}
		if got.Kind != m.Kind || seq != fabric.WorkerSeq(2, uint32(i+1)) {
			t.Fatalf("OpenWorker = %v seq %d", got.Kind, seq)
		}
	}
}

func TestOpenInvokeRejects(t *testing.T) {
	inv := fabrictest.Invoke("req-1", 1)
	msg := protocol.InvokeMessage(inv)
	good := fabrictest.Frame(t, fabrictest.Key, "req-1", protocol.RoleHost, 1, msg)
	tests := []struct {
		name    string
		m       *nats.Msg
		wantErr error
	}{
		{"not a frame", &nats.Msg{Data: []byte("hello\n")}, protocol.ErrMalformedFrame},
		{"wrong key", fabrictest.Frame(t, fabrictest.OtherKey, "req-1", protocol.RoleHost, 1, msg), protocol.ErrBadTag},
		{"tampered", fabrictest.Tamper(good), protocol.ErrBadTag},
		{"worker role", fabrictest.Frame(t, fabrictest.Key, "req-1", protocol.RoleWorker, 1, msg), protocol.ErrWrongRole},
		{"other session", fabrictest.Frame(t, fabrictest.Key, "req-2", protocol.RoleHost, 1, msg), protocol.ErrInvalidSession},
		{"seq of attempt 2", fabrictest.Frame(t, fabrictest.Key, "req-1", protocol.RoleHost, 3, msg), protocol.ErrSequence},
		{"cancel seq", fabrictest.Frame(t, fabrictest.Key, "req-1", protocol.RoleHost, 2, msg), protocol.ErrSequence},
		{"cancel as invoke", fabrictest.Frame(t, fabrictest.Key, "req-1", protocol.RoleHost, 1,
			protocol.CancelMessage(protocol.Cancel{RequestID: "req-1", Tool: "t", Attempt: 1, IdempotencyKey: "k"})), protocol.ErrInvalidMessage},
	}
	c := fabrictest.NewCodec(t, fabrictest.Key)
	if _, err := c.OpenInvoke(good.Header, good.Data); err != nil {
		t.Fatalf("good frame: %v", err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.OpenInvoke(tt.m.Header, tt.m.Data)
			fabrictest.WantErrIs(t, err, fabric.ErrForged, tt.wantErr)
		})
	}
}

func TestOpenCancelRejectsInvokeSequence(t *testing.T) {
	cancel := protocol.Cancel{RequestID: "req-1", Tool: "t", Attempt: 1, IdempotencyKey: "k"}
	m := fabrictest.Frame(t, fabrictest.Key, "req-1", protocol.RoleHost, 1, protocol.CancelMessage(cancel))
	_, err := fabrictest.NewCodec(t, fabrictest.Key).OpenCancel(m.Header, m.Data)
	fabrictest.WantErrIs(t, err, fabric.ErrForged, protocol.ErrSequence)
}

func TestOpenWorkerRejects(t *testing.T) {
	res := protocol.ResultMessage(fabrictest.Result("req-1", 2))
	seq := fabric.WorkerSeq(2, 1)
	tests := []struct {
		name    string
		m       *nats.Msg
		wantErr error
	}{
		{"wrong key", fabrictest.Frame(t, fabrictest.OtherKey, "req-1", protocol.RoleWorker, seq, res), protocol.ErrBadTag},
		{"host role", fabrictest.Frame(t, fabrictest.Key, "req-1", protocol.RoleHost, seq, res), protocol.ErrWrongRole},
		{"other session", fabrictest.Frame(t, fabrictest.Key, "req-9", protocol.RoleWorker, seq, res), protocol.ErrInvalidSession},
		{"attempt mismatch", fabrictest.Frame(t, fabrictest.Key, "req-1", protocol.RoleWorker, fabric.WorkerSeq(1, 1), res), protocol.ErrSequence},
		{"k zero", fabrictest.Frame(t, fabrictest.Key, "req-1", protocol.RoleWorker, fabric.WorkerSeq(2, 0), res), protocol.ErrSequence},
		{"attempt zero", fabrictest.Frame(t, fabrictest.Key, "req-1", protocol.RoleWorker, 5, res), protocol.ErrSequence},
		{"invoke from worker", fabrictest.Frame(t, fabrictest.Key, "req-1", protocol.RoleWorker, seq, protocol.InvokeMessage(fabrictest.Invoke("req-1", 1))), protocol.ErrInvalidMessage},
	}
	c := fabrictest.NewCodec(t, fabrictest.Key)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := c.OpenWorker(tt.m.Header, tt.m.Data)
			fabrictest.WantErrIs(t, err, fabric.ErrForged, tt.wantErr)
		})
	}
}

func TestSealWorkerRefusesMismatchedBinding(t *testing.T) {
	c := fabrictest.NewCodec(t, fabrictest.Key)
	res := protocol.ResultMessage(fabrictest.Result("req-1", 2))
	tests := []struct {
		name    string
		req     string
		attempt uint32
		k       uint32
		msg     protocol.WorkerMessage
		wantErr error
	}{
		{"other request", "req-2", 2, 1, res, protocol.ErrInvalidSession},
		{"other attempt", "req-1", 3, 1, res, fabric.ErrInvalidAttempt},
		{"k zero", "req-1", 2, 0, res, fabric.ErrInvalidAttempt},
		{"attempt zero", "req-1", 0, 1, res, fabric.ErrInvalidAttempt},
		{"host kind", "req-1", 1, 1, protocol.InvokeMessage(fabrictest.Invoke("req-1", 1)), protocol.ErrInvalidMessage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.SealWorker(tt.req, tt.attempt, tt.k, tt.msg)
			fabrictest.WantErrIs(t, err, tt.wantErr)
		})
	}
}

func TestNewCodecRefusesZeroKey(t *testing.T) {
	_, err := fabric.NewCodec(protocol.SessionKey{})
	fabrictest.WantErrIs(t, err, protocol.ErrInvalidKey)
}

func TestCodecIsSafeForConcurrentUse(t *testing.T) {
	c := fabrictest.NewCodec(t, fabrictest.Key)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				inv := fabrictest.Invoke("req", uint32(i%3+1))
				inv.Input = protocol.TextPayload(string(rune('a' + g)))
				data, err := c.SealInvoke(inv)
				if err == nil {
					var got protocol.Invoke
					got, err = c.OpenInvoke(data.Header, data.Data)
					if err == nil && got.Input.Text != inv.Input.Text {
						err = fabric.ErrForged
					}
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func BenchmarkCodecInvoke(b *testing.B) {
	c := fabrictest.NewCodec(b, fabrictest.Key)
	inv := fabrictest.Invoke("req-1", 1)
	b.ReportAllocs()
	for b.Loop() {
		data, err := c.SealInvoke(inv)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.OpenInvoke(data.Header, data.Data); err != nil {
			b.Fatal(err)
		}
	}
}

// A host's control frames reach a running call on one subject: a cancel or
// a stream denial, each bound to its request and attempt.
func TestOpenControl(t *testing.T) {
	c := fabrictest.NewCodec(t, fabrictest.Key)
	denied := protocol.StreamDenied{RequestID: "req-1", Tool: "t", Attempt: 2, Reason: "spent"}
	data, err := c.SealStreamDenied(denied)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := c.OpenControl(data.Header, data.Data)
	if err != nil || msg.Kind != protocol.KindStreamDenied || *msg.Denied != denied {
		t.Fatalf("OpenControl = %+v, %v", msg, err)
	}
	cancel := protocol.Cancel{RequestID: "req-1", Tool: "t", Attempt: 1, IdempotencyKey: "k"}
	data, err = c.SealCancel(cancel)
	if err != nil {
		t.Fatal(err)
	}
	if msg, err := c.OpenControl(data.Header, data.Data); err != nil || msg.Kind != protocol.KindCancel || *msg.Cancel != cancel {
		t.Fatalf("OpenControl(cancel) = %+v, %v", msg, err)
	}
	dm := protocol.StreamDeniedMessage(denied)
	for _, tc := range []struct {
		name    string
		m       *nats.Msg
		wantErr error
	}{
		{"wrong key", fabrictest.Frame(t, fabrictest.OtherKey, "req-1", protocol.RoleHost, fabric.StreamDeniedSeq(2), dm), protocol.ErrBadTag},
		{"worker role", fabrictest.Frame(t, fabrictest.Key, "req-1", protocol.RoleWorker, fabric.StreamDeniedSeq(2), dm), protocol.ErrWrongRole},
		{"other session", fabrictest.Frame(t, fabrictest.Key, "req-9", protocol.RoleHost, fabric.StreamDeniedSeq(2), dm), protocol.ErrInvalidSession},
		{"another attempt's number", fabrictest.Frame(t, fabrictest.Key, "req-1", protocol.RoleHost, fabric.StreamDeniedSeq(1), dm), protocol.ErrSequence},
		{"an invoke", fabrictest.Frame(t, fabrictest.Key, "req-1", protocol.RoleHost, fabric.InvokeSeq(1), protocol.InvokeMessage(fabrictest.Invoke("req-1", 1))), protocol.ErrInvalidMessage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.OpenControl(tc.m.Header, tc.m.Data)
			fabrictest.WantErrIs(t, err, fabric.ErrForged, tc.wantErr)
		})
	}
}
