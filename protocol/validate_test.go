package protocol_test

import (
	"encoding/json"
	"testing"

	"github.com/splashfabric/splashfabric/protocol"
)

func TestWorkerMessageValidateAcceptsEveryKind(t *testing.T) {
	kinds := map[protocol.MessageKind]bool{}
	for _, m := range oneOfEach(t) {
		wantErr(t, string(m.Kind), m.Validate(), nil)
		kinds[m.Kind] = true
	}
	if len(kinds) != 7 {
		t.Fatalf("covered %d kinds, want 7", len(kinds))
	}
}

func TestWorkerMessageValidate(t *testing.T) {
	inv := func(edit func(*protocol.Invoke)) protocol.WorkerMessage {
		v := validInvoke()
		edit(&v)
		return protocol.InvokeMessage(v)
	}
	res := func(edit func(*protocol.Result)) protocol.WorkerMessage {
		v := protocol.Result{RequestID: "req-1", Attempt: 1, Status: protocol.ResultSucceeded, Payload: textPayload("done")}
		edit(&v)
		return protocol.ResultMessage(v)
	}
	cancel := func(edit func(*protocol.Cancel)) protocol.WorkerMessage {
		v := protocol.Cancel{RequestID: "req-1", Tool: "text.remote", Attempt: 1, IdempotencyKey: "idem-1"}
		edit(&v)
		return protocol.CancelMessage(v)
	}
	reply := func(edit func(*protocol.CancelReply)) protocol.WorkerMessage {
		v := protocol.CancelReply{RequestID: "req-1", Attempt: 1, Disposition: protocol.CancelAcknowledged}
		edit(&v)
		return protocol.CancelReplyMessage(v)
	}
	rec := func(edit func(*protocol.OperationReconcileRequest)) protocol.WorkerMessage {
		v := validReconcile()
		edit(&v)
		return protocol.ReconcileMessage(v)
	}
	twoPayloads := protocol.InvokeMessage(validInvoke())
	twoPayloads.Chunk = &protocol.Chunk{RequestID: "req-1", Sequence: 1}
	badJSON := protocol.JSONPayload(json.RawMessage(`{"open":`))

	tests := []struct {
		name    string
		msg     protocol.WorkerMessage
		wantErr error
	}{
		{"empty message", protocol.WorkerMessage{}, protocol.ErrInvalidMessage},
		{"unknown kind", protocol.WorkerMessage{Kind: "shutdown"}, protocol.ErrInvalidMessage},
		{"kind without payload", protocol.WorkerMessage{Kind: protocol.KindResult}, protocol.ErrInvalidMessage},
		{"payload of another kind", protocol.WorkerMessage{Kind: protocol.KindResult, Chunk: &protocol.Chunk{RequestID: "r", Sequence: 1}}, protocol.ErrInvalidMessage},
		{"two payloads", twoPayloads, protocol.ErrInvalidMessage},

		{"invoke valid without stream or deadline", inv(func(v *protocol.Invoke) { v.Stream = nil; v.DeadlineMillis = 0; v.OutputLimit = 0 }), nil},
		{"invoke empty request id", inv(func(v *protocol.Invoke) { v.RequestID = "" }), protocol.ErrInvalidMessage},
		{"invoke empty idempotency key", inv(func(v *protocol.Invoke) { v.IdempotencyKey = "" }), protocol.ErrInvalidMessage},
		{"invoke illegal tool", inv(func(v *protocol.Invoke) { v.Tool = "text.*" }), protocol.ErrInvalidToolName},
		{"invoke empty tool", inv(func(v *protocol.Invoke) { v.Tool = "" }), protocol.ErrInvalidMessage},
		{"invoke attempt zero", inv(func(v *protocol.Invoke) { v.Attempt = 0 }), protocol.ErrInvalidMessage},
		{"invoke attempt beyond limit", inv(func(v *protocol.Invoke) { v.Attempt = 4 }), protocol.ErrInvalidMessage},
		{"invoke negative output limit", inv(func(v *protocol.Invoke) { v.OutputLimit = -1 }), protocol.ErrInvalidMessage},
		{"invoke negative deadline", inv(func(v *protocol.Invoke) { v.DeadlineMillis = -1 }), protocol.ErrInvalidMessage},
		{"invoke negative stream limit", inv(func(v *protocol.Invoke) { v.Stream = &protocol.StreamLimits{MaxChunks: -1} }), protocol.ErrInvalidMessage},
		{"invoke bad input format", inv(func(v *protocol.Invoke) { v.Input = protocol.WorkerPayload{Format: "xml"} }), protocol.ErrInvalidMessage},
		{"invoke json input", inv(func(v *protocol.Invoke) { v.Input = protocol.JSONPayload(json.RawMessage(`[1,2]`)) }), nil},
		{"invoke invalid json input", inv(func(v *protocol.Invoke) { v.Input = badJSON }), protocol.ErrInvalidMessage},

		{"cancel empty request id", cancel(func(v *protocol.Cancel) { v.RequestID = "" }), protocol.ErrInvalidMessage},
		{"cancel empty idempotency key", cancel(func(v *protocol.Cancel) { v.IdempotencyKey = "" }), protocol.ErrInvalidMessage},
		{"cancel attempt zero", cancel(func(v *protocol.Cancel) { v.Attempt = 0 }), protocol.ErrInvalidMessage},
		{"cancel illegal tool", cancel(func(v *protocol.Cancel) { v.Tool = "a b" }), protocol.ErrInvalidToolName},

		{"chunk empty text", protocol.ChunkMessage(protocol.Chunk{RequestID: "req-1", Sequence: 1}), nil},
		{"chunk empty request id", protocol.ChunkMessage(protocol.Chunk{Sequence: 1, Text: "x"}), protocol.ErrInvalidMessage},
		{"chunk sequence zero", protocol.ChunkMessage(protocol.Chunk{RequestID: "req-1", Text: "x"}), protocol.ErrInvalidMessage},

		{"result empty request id", res(func(v *protocol.Result) { v.RequestID = "" }), protocol.ErrInvalidMessage},
		{"result attempt zero", res(func(v *protocol.Result) { v.Attempt = 0 }), protocol.ErrInvalidMessage},
		{"result unknown status", res(func(v *protocol.Result) { v.Status = "done" }), protocol.ErrInvalidMessage},
		{"result succeeded without payload", res(func(v *protocol.Result) { v.Payload = nil }), protocol.ErrInvalidMessage},
		{"result succeeded with error", res(func(v *protocol.Result) { v.Error = "but" }), protocol.ErrInvalidMessage},
		{"result succeeded with invalid json", res(func(v *protocol.Result) { v.Payload = &badJSON }), protocol.ErrInvalidMessage},
		{"result failed with reason", res(func(v *protocol.Result) { v.Status = protocol.ResultFailed; v.Payload = nil; v.Error = "boom" }), nil},
		{"result failed without reason", res(func(v *protocol.Result) { v.Status = protocol.ResultFailed; v.Payload = nil }), protocol.ErrInvalidMessage},
		{"result failed with payload", res(func(v *protocol.Result) { v.Status = protocol.ResultFailed; v.Error = "boom" }), protocol.ErrInvalidMessage},
		{"result retry transient", res(func(v *protocol.Result) { v.Status = protocol.ResultRetryTransient; v.Payload = nil }), nil},
		{"result rate limited with retry after", res(func(v *protocol.Result) {
			v.Status = protocol.ResultRetryRateLimited
			v.Payload = nil
			v.RetryAfterMillis = 250
		}), nil},
		{"result retry after on transient", res(func(v *protocol.Result) {
			v.Status = protocol.ResultRetryTransient
			v.Payload = nil
			v.RetryAfterMillis = 250
		}), protocol.ErrInvalidMessage},
		{"result negative retry after", res(func(v *protocol.Result) {
			v.Status = protocol.ResultRetryRateLimited
			v.Payload = nil
			v.RetryAfterMillis = -1
		}), protocol.ErrInvalidMessage},
		{"result indeterminate", res(func(v *protocol.Result) { v.Status = protocol.ResultIndeterminate; v.Payload = nil }), nil},

		{"reply too late", reply(func(v *protocol.CancelReply) { v.Disposition = protocol.CancelTooLate }), nil},
		{"reply unsupported", reply(func(v *protocol.CancelReply) { v.Disposition = protocol.CancelUnsupported }), nil},
		{"reply unknown disposition", reply(func(v *protocol.CancelReply) { v.Disposition = "maybe" }), protocol.ErrInvalidMessage},
		{"reply empty request id", reply(func(v *protocol.CancelReply) { v.RequestID = "" }), protocol.ErrInvalidMessage},
		{"reply attempt zero", reply(func(v *protocol.CancelReply) { v.Attempt = 0 }), protocol.ErrInvalidMessage},

		{"reconcile empty session", rec(func(v *protocol.OperationReconcileRequest) { v.SessionID = "" }), protocol.ErrInvalidMessage},
		{"reconcile empty request id", rec(func(v *protocol.OperationReconcileRequest) { v.RequestID = "" }), protocol.ErrInvalidMessage},
		{"reconcile empty operation key", rec(func(v *protocol.OperationReconcileRequest) { v.OperationKey = "" }), protocol.ErrInvalidMessage},
		{"reconcile illegal tool", rec(func(v *protocol.OperationReconcileRequest) { v.Tool = "x..y" }), protocol.ErrInvalidToolName},

		{"reconciled with invalid status", protocol.ReconciledMessage(protocol.OperationReconcileResult{
			SessionID: "s", RequestID: "r", Tool: "t", OperationKey: "k", Status: protocol.OperationStatus{State: "paused"},
		}), protocol.ErrInvalidMessage},
	}
	for _, tc := range tests {
		wantErr(t, tc.name, tc.msg.Validate(), tc.wantErr)
	}
}

func TestInvalidToolNameInMessageIsAlsoInvalidMessage(t *testing.T) {
	v := validInvoke()
	v.Tool = "text.>"
	err := protocol.InvokeMessage(v).Validate()
	wantErr(t, "message", err, protocol.ErrInvalidMessage)
	wantErr(t, "tool", err, protocol.ErrInvalidToolName)
}

func TestWorkerPayloadValidate(t *testing.T) {
	tests := []struct {
		name    string
		p       protocol.WorkerPayload
		wantErr error
	}{
		{"text", protocol.TextPayload("hi"), nil},
		{"empty text", protocol.TextPayload(""), nil},
		{"json object", protocol.JSONPayload(json.RawMessage(`{"a":[1,2]}`)), nil},
		{"json scalar", protocol.JSONPayload(json.RawMessage(`"s"`)), nil},
		{"json null", protocol.JSONPayload(json.RawMessage(`null`)), nil},
		{"json empty", protocol.JSONPayload(nil), protocol.ErrInvalidMessage},
		{"json truncated", protocol.JSONPayload(json.RawMessage(`{"a":`)), protocol.ErrInvalidMessage},
		{"json two values", protocol.JSONPayload(json.RawMessage(`1 2`)), protocol.ErrInvalidMessage},
		{"json with text", protocol.WorkerPayload{Format: protocol.FormatJSON, Text: "x", JSON: json.RawMessage(`1`)}, protocol.ErrInvalidMessage},
		{"text with json", protocol.WorkerPayload{Format: protocol.FormatText, Text: "x", JSON: json.RawMessage(`1`)}, protocol.ErrInvalidMessage},
		{"no format", protocol.WorkerPayload{Text: "x"}, protocol.ErrInvalidMessage},
		{"unknown format", protocol.WorkerPayload{Format: "xml", Text: "<a/>"}, protocol.ErrInvalidMessage},
	}
	for _, tc := range tests {
		wantErr(t, tc.name, tc.p.Validate(), tc.wantErr)
	}
}

func TestOperationStatusValidate(t *testing.T) {
	bad := protocol.JSONPayload(json.RawMessage(`nope`))
	tests := []struct {
		name    string
		s       protocol.OperationStatus
		wantErr error
	}{
		{"running", protocol.StatusRunning(), nil},
		{"succeeded text", protocol.StatusSucceeded(protocol.TextPayload("done")), nil},
		{"succeeded json", protocol.StatusSucceeded(protocol.JSONPayload(json.RawMessage(`{"v":1}`))), nil},
		{"failed", protocol.StatusFailed("boom"), nil},
		{"cancelled", protocol.StatusCancelled(), nil},
		{"unknown", protocol.StatusUnknown(), nil},
		{"no state", protocol.OperationStatus{}, protocol.ErrInvalidMessage},
		{"unknown state", protocol.OperationStatus{State: "paused"}, protocol.ErrInvalidMessage},
		{"succeeded without payload", protocol.OperationStatus{State: protocol.OperationSucceeded}, protocol.ErrInvalidMessage},
		{"succeeded with invalid json", protocol.StatusSucceeded(bad), protocol.ErrInvalidMessage},
		{"succeeded with error", protocol.OperationStatus{State: protocol.OperationSucceeded, Payload: textPayload("x"), Error: "e"}, protocol.ErrInvalidMessage},
		{"failed without reason", protocol.StatusFailed(""), protocol.ErrInvalidMessage},
		{"failed with payload", protocol.OperationStatus{State: protocol.OperationFailed, Error: "e", Payload: textPayload("x")}, protocol.ErrInvalidMessage},
		{"running with payload", protocol.OperationStatus{State: protocol.OperationRunning, Payload: textPayload("x")}, protocol.ErrInvalidMessage},
		{"cancelled with payload", protocol.OperationStatus{State: protocol.OperationCancelled, Payload: textPayload("x")}, protocol.ErrInvalidMessage},
		{"unknown with payload", protocol.OperationStatus{State: protocol.OperationUnknown, Payload: textPayload("x")}, protocol.ErrInvalidMessage},
		{"running with error", protocol.OperationStatus{State: protocol.OperationRunning, Error: "e"}, protocol.ErrInvalidMessage},
	}
	for _, tc := range tests {
		wantErr(t, tc.name, tc.s.Validate(), tc.wantErr)
	}
}

func TestNewOperationReconcileResultValidatesOnConstruction(t *testing.T) {
	ok := protocol.StatusRunning()
	tests := []struct {
		name                              string
		session, request, tool, operation string
		status                            protocol.OperationStatus
		wantErr                           error
	}{
		{"valid", "worker-1", "reconcile-1", "text.remote", "op", ok, nil},
		{"empty session", "", "reconcile-1", "text.remote", "op", ok, protocol.ErrInvalidMessage},
		{"empty request", "worker-1", "", "text.remote", "op", ok, protocol.ErrInvalidMessage},
		{"empty operation key", "worker-1", "reconcile-1", "text.remote", "", ok, protocol.ErrInvalidMessage},
		{"empty tool", "worker-1", "reconcile-1", "", "op", ok, protocol.ErrInvalidToolName},
		{"illegal tool", "worker-1", "reconcile-1", "text remote", "op", ok, protocol.ErrInvalidToolName},
		{"invalid status", "worker-1", "reconcile-1", "text.remote", "op", protocol.StatusFailed(""), protocol.ErrInvalidMessage},
	}
	for _, tc := range tests {
		r, err := protocol.NewOperationReconcileResult(tc.session, tc.request, tc.tool, tc.operation, tc.status)
		wantErr(t, tc.name, err, tc.wantErr)
		if err != nil && r != (protocol.OperationReconcileResult{}) {
			t.Fatalf("%s: rejected result is not zero: %+v", tc.name, r)
		}
		if err == nil && r.Validate() != nil {
			t.Fatalf("%s: constructed result does not validate", tc.name)
		}
	}
}

func TestOperationReconcileResultAnswersOnlyItsRequest(t *testing.T) {
	req := validReconcile()
	tests := []struct {
		name    string
		edit    func(*protocol.OperationReconcileRequest)
		wantErr error
	}{
		{"same request", func(*protocol.OperationReconcileRequest) {}, nil},
		{"other session", func(r *protocol.OperationReconcileRequest) { r.SessionID = "worker-2" }, protocol.ErrInvalidMessage},
		{"other request id", func(r *protocol.OperationReconcileRequest) { r.RequestID = "reconcile-2" }, protocol.ErrInvalidMessage},
		{"other tool", func(r *protocol.OperationReconcileRequest) { r.Tool = "text.local" }, protocol.ErrInvalidMessage},
		{"other operation key", func(r *protocol.OperationReconcileRequest) { r.OperationKey = "op-other" }, protocol.ErrInvalidMessage},
	}
	for _, tc := range tests {
		asked := req
		tc.edit(&asked)
		res, err := protocol.NewOperationReconcileResult(req.SessionID, req.RequestID, req.Tool, req.OperationKey, protocol.StatusUnknown())
		if err != nil {
			t.Fatal(err)
		}
		wantErr(t, tc.name, res.Answers(asked), tc.wantErr)
	}
}
