package host

import (
	"fmt"

	"github.com/splashfabric/splashfabric/protocol"
)

// OutboundReconciliation is a sealed reconciliation request ready to send;
// keep Request to check the answer against.
type OutboundReconciliation struct {
	Request protocol.OperationReconcileRequest
	Frame   protocol.Frame
}

// ExternalReconciliation is what an authenticated reconciliation did.
type ExternalReconciliation struct {
	// Running: the worker still runs the operation, which stays pending
	// with no terminal audit event.
	Running bool
	// State is the worker's reported state. For OperationUnknown (the
	// worker has no record) the operation also stays pending: only the
	// host can decide whether to retry, cancel or wait for the deadline.
	State protocol.OperationState
	// Resumed is the script's state if resolving the operation resumed it.
	Resumed *EvalResult
}

// PrepareAuthenticatedExternalReconciliation builds and seals a request
// for the status of a claimed operation. The request names the operation
// by its idempotency key, never its opaque id. auth must be the host end
// of the worker's session; sealing consumes one outbound sequence number
// and changes nothing in the runtime.
func (r *Runtime) PrepareAuthenticatedExternalReconciliation(id ExternalToolID, requestID string, auth *protocol.SessionAuthenticator) (OutboundReconciliation, error) {
	if auth == nil || auth.Role() != protocol.RoleHost {
		return OutboundReconciliation{}, fmt.Errorf("%w: %w: reconciliation needs the host end of the session", ErrInvalidInput, protocol.ErrWrongRole)
	}
	op, err := r.lookup(id, actReconcile)
	if err != nil {
		return OutboundReconciliation{}, err
	}
	req := protocol.OperationReconcileRequest{SessionID: auth.SessionID(), RequestID: requestID, Tool: op.tool.policy.Name, OperationKey: op.key}
	if err := req.Validate(); err != nil {
		return OutboundReconciliation{}, fmt.Errorf("%w: %w", ErrInvalidInput, err)
	}
	f, err := auth.Seal(protocol.ReconcileMessage(req))
	if err != nil {
		return OutboundReconciliation{}, err
	}
	return OutboundReconciliation{Request: req, Frame: f}, nil
}

// ReconcileAuthenticatedExternalTool applies a worker's authenticated
// answer to req. In order it checks that the operation is still claimed
// and that req names it in this session, then opens response with auth
// (tag, worker role, next sequence), then that the message is a
// reconciled_operation answering exactly req. Any failure returns an
// error wrapping ErrReconcileMismatch and leaves the runtime unchanged. A
// frame that fails authentication does not advance auth either; one that
// authenticates but then mismatches has consumed its sequence number,
// since the peer really sent it.
//
// A succeeded status passes the same output checks as CompleteExternalTool
// (a failing one resolves as ToolInvalidOutput), failed resolves as a
// failure, cancelled as cancelled; running and unknown leave the operation
// pending. A terminal status after the deadline resolves as a timeout.
func (r *Runtime) ReconcileAuthenticatedExternalTool(id ExternalToolID, req protocol.OperationReconcileRequest, auth *protocol.SessionAuthenticator, response protocol.Frame) (ExternalReconciliation, error) {
	if auth == nil || auth.Role() != protocol.RoleHost {
		return ExternalReconciliation{}, fmt.Errorf("%w: %w: reconciliation needs the host end of the session", ErrReconcileMismatch, protocol.ErrWrongRole)
	}
	op, err := r.lookup(id, actReconcile)
	if err != nil {
		return ExternalReconciliation{}, err
	}
	switch {
	case req.SessionID != auth.SessionID():
		return ExternalReconciliation{}, fmt.Errorf("%w: request session %q, authenticator %q", ErrReconcileMismatch, req.SessionID, auth.SessionID())
	case req.Tool != op.tool.policy.Name:
		return ExternalReconciliation{}, fmt.Errorf("%w: request tool %q, operation %q", ErrReconcileMismatch, req.Tool, op.tool.policy.Name)
	case req.OperationKey != op.key:
		return ExternalReconciliation{}, fmt.Errorf("%w: request key %q, operation %q", ErrReconcileMismatch, req.OperationKey, op.key)
	}
	msg, err := auth.Open(response)
	if err != nil {
		return ExternalReconciliation{}, fmt.Errorf("%w: %w", ErrReconcileMismatch, err)
	}
	if msg.Kind != protocol.KindReconciledOperation || msg.Reconciled == nil {
		return ExternalReconciliation{}, fmt.Errorf("%w: got a %s message", ErrReconcileMismatch, msg.Kind)
	}
	res := *msg.Reconciled
	if err := res.Answers(req); err != nil {
		return ExternalReconciliation{}, fmt.Errorf("%w: %w", ErrReconcileMismatch, err)
	}
	if err := res.Validate(); err != nil {
		return ExternalReconciliation{}, fmt.Errorf("%w: %w", ErrReconcileMismatch, err)
	}
	out := ExternalReconciliation{State: res.Status.State}
	switch res.Status.State {
	case protocol.OperationRunning, protocol.OperationUnknown:
		out.Running = res.Status.State == protocol.OperationRunning
		r.record(op, AuditReconciled, string(res.Status.State), 0, 0)
		return out, nil
	case protocol.OperationSucceeded:
		p := res.Status.Payload
		switch {
		case p.Format != op.tool.format:
			r.deliver(op, ToolResult{Err: errWrongFormat{got: p.Format, want: op.tool.format}}, "reconciled")
		case p.Format == FormatJSON:
			r.deliver(op, Ok(string(p.JSON)), "reconciled")
		default:
			r.deliver(op, Ok(p.Text), "reconciled")
		}
	case protocol.OperationFailed:
		r.deliver(op, Fail(res.Status.Error), "reconciled")
	case protocol.OperationCancelled:
		if op.expired(r.clock.Now()) {
			r.timeout(op, "cancellation reconciled after the deadline")
		} else {
			r.cancel(op, "cancellation reconciled")
		}
	}
	out.Resumed = r.finish()
	return out, nil
}

// errWrongFormat is a reconciled payload of the other format than the
// tool's; deliver resolves it as invalid output, like any bad result.
type errWrongFormat struct{ got, want Format }

func (e errWrongFormat) Error() string {
	return fmt.Sprintf("payload is %s, tool returns %s", e.got, e.want)
}
