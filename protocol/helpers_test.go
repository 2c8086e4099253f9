package protocol_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"testing"

	"github.com/splashfabric/splashfabric/protocol"
)

var testKeyBytes = [protocol.AuthTagBytes]byte{7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7}

var testKey = protocol.SessionKeyFromArray(testKeyBytes)

// specTag computes a tag straight from the canonical encoding written in the
// package documentation, independently of the package's own encoder.
func specTag(key [protocol.AuthTagBytes]byte, sessionID string, role protocol.SessionRole, seq uint64, msg []byte) string {
	h := hmac.New(sha256.New, key[:])
	h.Write([]byte("splash-frame-v1\x00"))
	h.Write(binary.BigEndian.AppendUint32(nil, uint32(len(sessionID))))
	h.Write([]byte(sessionID))
	h.Write([]byte{byte(role)})
	h.Write(binary.BigEndian.AppendUint64(nil, seq))
	h.Write(binary.BigEndian.AppendUint32(nil, uint32(len(msg))))
	h.Write(msg)
	return hex.EncodeToString(h.Sum(nil))
}

// sealRaw builds an authentic frame around arbitrary message bytes, which
// Seal would never produce, to test what happens after the tag passes.
func sealRaw(sessionID string, role protocol.SessionRole, seq uint64, msg string) protocol.Frame {
	return protocol.Frame{SessionID: sessionID, Role: role, Sequence: seq, Message: json.RawMessage(msg),
		Tag: specTag(testKeyBytes, sessionID, role, seq, []byte(msg))}
}

func wantErr(t *testing.T, name string, got, want error) {
	t.Helper()
	if want == nil {
		if got != nil {
			t.Fatalf("%s: unexpected error: %v", name, got)
		}
		return
	}
	if !errors.Is(got, want) {
		t.Fatalf("%s: error %v, want %v", name, got, want)
	}
}

func textPayload(s string) *protocol.WorkerPayload {
	p := protocol.TextPayload(s)
	return &p
}

func validInvoke() protocol.Invoke {
	return protocol.Invoke{
		RequestID:      "req-1",
		Tool:           "text.remote",
		Input:          protocol.TextPayload("release"),
		CallIndex:      0,
		Attempt:        1,
		AttemptLimit:   3,
		IdempotencyKey: "idem-1",
		OutputLimit:    1024,
		Stream:         &protocol.StreamLimits{MaxChunks: 4, MaxChunkBytes: 64, MaxSourceBytes: 256, MaxReleasedBytes: 256},
		DeadlineMillis: 5000,
	}
}

func validReconcile() protocol.OperationReconcileRequest {
	return protocol.OperationReconcileRequest{SessionID: "worker-1", RequestID: "reconcile-1", Tool: "text.remote", OperationKey: "op-key"}
}

// oneOfEach returns a valid message of every kind.
func oneOfEach(t testing.TB) []protocol.WorkerMessage {
	t.Helper()
	res, err := protocol.NewOperationReconcileResult("worker-1", "reconcile-1", "text.remote", "op-key",
		protocol.StatusSucceeded(protocol.JSONPayload(json.RawMessage(`{"ok":true}`))))
	if err != nil {
		t.Fatal(err)
	}
	return []protocol.WorkerMessage{
		protocol.InvokeMessage(validInvoke()),
		protocol.CancelMessage(protocol.Cancel{RequestID: "req-1", Tool: "text.remote", Attempt: 1, IdempotencyKey: "idem-1"}),
		protocol.ChunkMessage(protocol.Chunk{RequestID: "req-1", Sequence: 1, Text: "partial <&> output"}),
		protocol.ResultMessage(protocol.Result{RequestID: "req-1", Attempt: 1, Status: protocol.ResultSucceeded, Payload: textPayload("done")}),
		protocol.CancelReplyMessage(protocol.CancelReply{RequestID: "req-1", Attempt: 1, Disposition: protocol.CancelTooLate}),
		protocol.ReconcileMessage(validReconcile()),
		protocol.ReconciledMessage(res),
	}
}
