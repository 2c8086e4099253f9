package host

import "fmt"

// RecordLateResult writes a late_result audit event for an operation that
// already ended (typically timed out) when its worker's answer finally
// arrives. It changes no state: the operation's outcome stands. It fails
// with ErrUnknownOperation for an id the runtime never issued or has
// forgotten, and with a wrong-state error for an operation still live,
// which must be completed instead.
func (r *Runtime) RecordLateResult(id ExternalToolID, attempt uint32, detail string, bytes int) error {
	if op := r.ops.get(id); op != nil {
		return &StateError{ID: id, Tool: op.tool.policy.Name, State: op.state, Action: "record a late result", Err: ErrWrongState}
	}
	rec, ok := r.finished.get(id)
	if !ok {
		return fmt.Errorf("%w: %s", ErrUnknownOperation, id)
	}
	r.audit.add(AuditEvent{
		At: r.clock.Now(), ID: id, Tool: rec.tool.policy.Name, CallIndex: rec.callIndex,
		Attempt: attempt, Outcome: AuditLateResult, Detail: detail, Bytes: bytes,
	})
	return nil
}
