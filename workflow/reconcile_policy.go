package workflow

import (
	"fmt"
	"strconv"

	"github.com/splashfabric/splashfabric/protocol"
)

// ReconcileAction is what the host does with an operation after a worker
// answered a reconciliation request for it.
type ReconcileAction int

// Reconcile actions.
const (
	// ReconcileWait: the operation may still end by itself (it runs, or
	// its invocation may yet be delivered); ask again later.
	ReconcileWait ReconcileAction = iota + 1
	// ReconcileApply: the worker holds the terminal status (succeeded,
	// failed, cancelled); apply it as the operation's answer.
	ReconcileApply
	// ReconcileRedispatch: nothing is known of the operation and no
	// delivery is due any more; publish it again under the same
	// operation key. Only for a tool declared idempotent, whose effect
	// may happen twice and whose journal keeps one result per key.
	ReconcileRedispatch
	// ReconcileIndeterminate: nothing is known of a claimed (not
	// idempotent) tool's operation and no delivery is due any more; end
	// it as an indeterminate failure, since its effect may have happened
	// and must not happen again.
	ReconcileIndeterminate
)

// String returns the action's lower-case name.
func (a ReconcileAction) String() string {
	switch a {
	case ReconcileWait:
		return "wait"
	case ReconcileApply:
		return "apply"
	case ReconcileRedispatch:
		return "redispatch"
	case ReconcileIndeterminate:
		return "indeterminate"
	}
	return fmt.Sprintf("reconcile_action(%d)", int(a))
}

// DecideReconcile is the host's policy for an answered reconciliation. It
// looks only at the worker's state, whether the tool is declared
// idempotent, and whether the redelivery horizon (past which the stream
// will deliver the invocation no more) has passed. No outcome dispatches
// a claimed tool's operation twice: for it, an unknown past the horizon is
// indeterminate. A state outside protocol's five is refused with
// ErrInvalidReconcileState.
func DecideReconcile(state protocol.OperationState, idempotent, horizonPassed bool) (ReconcileAction, error) {
	switch state {
	case protocol.OperationSucceeded, protocol.OperationFailed, protocol.OperationCancelled:
		return ReconcileApply, nil
	case protocol.OperationRunning:
		return ReconcileWait, nil
	case protocol.OperationUnknown:
		switch {
		case !horizonPassed:
			return ReconcileWait, nil
		case idempotent:
			return ReconcileRedispatch, nil
		default:
			return ReconcileIndeterminate, nil
		}
	}
	return 0, fmt.Errorf("%w: %s", ErrInvalidReconcileState, strconv.Quote(string(state)))
}
