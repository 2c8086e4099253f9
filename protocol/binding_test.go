package protocol_test

import (
	"errors"
	"testing"

	"github.com/splashfabric/splashfabric/protocol"
)

func TestWorkerBindingAndTerminal(t *testing.T) {
	p := protocol.TextPayload("x")
	tests := []struct {
		name     string
		msg      protocol.WorkerMessage
		req      string
		attempt  uint32
		terminal bool
		wantErr  error
	}{
		{"chunk", protocol.ChunkMessage(protocol.Chunk{RequestID: "r", Sequence: 1, Text: "c"}), "r", 0, false, nil},
		{"result", protocol.ResultMessage(protocol.Result{RequestID: "r", Attempt: 2, Status: protocol.ResultSucceeded, Payload: &p}), "r", 2, true, nil},
		{"acknowledged", protocol.CancelReplyMessage(protocol.CancelReply{RequestID: "r", Attempt: 3, Disposition: protocol.CancelAcknowledged}), "r", 3, true, nil},
		{"too late", protocol.CancelReplyMessage(protocol.CancelReply{RequestID: "r", Attempt: 3, Disposition: protocol.CancelTooLate}), "r", 3, false, nil},
		{"invoke", protocol.InvokeMessage(protocol.Invoke{RequestID: "r"}), "", 0, false, protocol.ErrInvalidMessage},
		{"kind without its body", protocol.WorkerMessage{Kind: protocol.KindResult}, "", 0, true, protocol.ErrInvalidMessage},
	}
	for _, tc := range tests {
		req, attempt, err := tc.msg.WorkerBinding()
		if req != tc.req || attempt != tc.attempt || !errors.Is(err, tc.wantErr) {
			t.Errorf("%s: WorkerBinding = %q, %d, %v; want %q, %d, %v", tc.name, req, attempt, err, tc.req, tc.attempt, tc.wantErr)
		}
		if got := tc.msg.IsTerminal(); got != tc.terminal {
			t.Errorf("%s: IsTerminal = %v", tc.name, got)
		}
	}
}
