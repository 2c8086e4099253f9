package fabric

import (
	"github.com/nats-io/nats.go"

	"github.com/splashfabric/splashfabric/protocol"
)

// A reconciliation is one exchange with a session of its own: both frames
// carry the request's id as their session and ReconcileSeq as their
// sequence, so neither can pass for a frame of an operation, and an answer
// sealed for one request cannot pass for another's without its message
// saying so.

// SealReconcile seals req as the host's reconciliation request: session
// req.RequestID, sequence ReconcileSeq. An invalid request is refused
// before sealing.
func (c *Codec) SealReconcile(req protocol.OperationReconcileRequest) (*nats.Msg, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	return c.seal(req.RequestID, protocol.RoleHost, ReconcileSeq, protocol.ReconcileMessage(req))
}

// OpenReconcile authenticates a reconciliation request: sealed by a host,
// a reconcile_operation, its session equal to its request id and its
// sequence ReconcileSeq. Every rejection wraps ErrForged.
func (c *Codec) OpenReconcile(h nats.Header, body []byte) (protocol.OperationReconcileRequest, error) {
	f, msg, err := c.open(h, body, protocol.RoleHost)
	if err != nil {
		return protocol.OperationReconcileRequest{}, err
	}
	if msg.Kind != protocol.KindReconcileOperation || msg.Reconcile == nil {
		return protocol.OperationReconcileRequest{}, wrongKind(msg.Kind, "reconcile_operation")
	}
	req := *msg.Reconcile
	if err := req.Validate(); err != nil {
		return protocol.OperationReconcileRequest{}, forged(err)
	}
	if f.SessionID != req.RequestID {
		return protocol.OperationReconcileRequest{}, sessionMismatch(f.SessionID, req.RequestID)
	}
	if f.Sequence != ReconcileSeq {
		return protocol.OperationReconcileRequest{}, seqMismatch(f.Sequence, ReconcileSeq)
	}
	return req, nil
}

// SealReconciled seals res as a worker's answer to the request it names.
// A result that does not validate is refused before sealing.
func (c *Codec) SealReconciled(res protocol.OperationReconcileResult) (*nats.Msg, error) {
	if err := res.Validate(); err != nil {
		return nil, err
	}
	return c.seal(res.RequestID, protocol.RoleWorker, ReconcileSeq, protocol.ReconciledMessage(res))
}

// OpenReconciled authenticates a worker's answer as OpenReconcile does a
// request, with the worker's role. It proves who wrote the answer and to
// which request id; whether that is the request asked is the caller's
// check (protocol.OperationReconcileResult.Answers).
func (c *Codec) OpenReconciled(h nats.Header, body []byte) (protocol.OperationReconcileResult, error) {
	f, msg, err := c.open(h, body, protocol.RoleWorker)
	if err != nil {
		return protocol.OperationReconcileResult{}, err
	}
	if msg.Kind != protocol.KindReconciledOperation || msg.Reconciled == nil {
		return protocol.OperationReconcileResult{}, wrongKind(msg.Kind, "reconciled_operation")
	}
	res := *msg.Reconciled
	if err := res.Validate(); err != nil {
		return protocol.OperationReconcileResult{}, forged(err)
	}
	if f.SessionID != res.RequestID {
		return protocol.OperationReconcileResult{}, sessionMismatch(f.SessionID, res.RequestID)
	}
	if f.Sequence != ReconcileSeq {
		return protocol.OperationReconcileResult{}, seqMismatch(f.Sequence, ReconcileSeq)
	}
	return res, nil
}
