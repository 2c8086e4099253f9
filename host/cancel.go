package host

// ExternalToolCancellationRequest identifies the attempt to stop. It is
// correlation metadata for the owning adapter, not authority and not
// proof that work stopped; it deliberately omits the input.
type ExternalToolCancellationRequest struct {
	ID             ExternalToolID
	Tool           string
	CallIndex      uint64
	Attempt        uint32
	IdempotencyKey string
}

// RequestExternalToolCancellation moves a claimed operation to
// cancellation requested. The promise stays pending; retries and chunks
// are refused from now on, while a success or failure may still win.
// Repeating the request returns the same identity and changes nothing. A
// queued operation has no adapter to ask (ErrNotClaimed): cancel it
// directly with CancelExternalTool.
func (r *Runtime) RequestExternalToolCancellation(id ExternalToolID) (ExternalToolCancellationRequest, error) {
	op, err := r.lookup(id, actRequestCancel)
	if err != nil {
		return ExternalToolCancellationRequest{}, err
	}
	if op.state == Claimed {
		op.move(CancellationRequested)
		r.record(op, AuditCancellationRequested, "", 0, 0)
	}
	return ExternalToolCancellationRequest{ID: op.id, Tool: op.tool.policy.Name, CallIndex: op.callIndex, Attempt: op.attempt, IdempotencyKey: op.key}, nil
}

// ConfirmExternalToolCancellation records that the adapter acknowledged
// a requested cancellation: the operation ends cancelled and any later
// result for it is refused. Without a prior request it is refused with
// ErrCancellationNotRequested.
func (r *Runtime) ConfirmExternalToolCancellation(id ExternalToolID) (*EvalResult, error) {
	op, err := r.lookup(id, actConfirmCancel)
	if err != nil {
		return nil, err
	}
	r.cancel(op, "cancellation confirmed")
	return r.finish(), nil
}

// CancelExternalTool is the host's direct terminal assertion that an
// operation is cancelled, for an already-authenticated terminal worker
// observation; it stages no request. On a queued operation it removes it
// from the claim queue, so it is never dispatched. It is not the way to
// ask a running worker to stop: use RequestExternalToolCancellation.
func (r *Runtime) CancelExternalTool(id ExternalToolID) (*EvalResult, error) {
	return r.CancelExternalToolBecause(id, "")
}

// CancelExternalToolBecause is CancelExternalTool with the reason the
// audit event and the script's error give (an operator's forced end of a
// session, say); "" is the default reason.
func (r *Runtime) CancelExternalToolBecause(id ExternalToolID, reason string) (*EvalResult, error) {
	op, err := r.lookup(id, actCancel)
	if err != nil {
		return nil, err
	}
	switch {
	case reason != "":
	case op.state == Queued:
		reason = "cancelled by host before claim"
	default:
		reason = "cancelled by host"
	}
	r.cancel(op, reason)
	return r.finish(), nil
}

func (r *Runtime) cancel(op *operation, reason string) {
	r.resolve(op, Cancelled, Settlement{Err: &ToolError{Tool: op.tool.policy.Name, Kind: ToolCancelled, Reason: reason}}, AuditCancelled, reason, 0)
}
