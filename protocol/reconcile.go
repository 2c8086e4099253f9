package protocol

// OperationState is what a worker knows about an operation it was asked to
// reconcile.
type OperationState string

// Operation states.
const (
	OperationRunning   OperationState = "running"
	OperationSucceeded OperationState = "succeeded"
	OperationFailed    OperationState = "failed"
	OperationCancelled OperationState = "cancelled"
	OperationUnknown   OperationState = "unknown"
)

// OperationStatus is a reconciled operation's state; Payload is set only for
// succeeded, Error only for failed.
type OperationStatus struct {
	State   OperationState `json:"state"`
	Payload *WorkerPayload `json:"payload,omitempty"`
	Error   string         `json:"error,omitempty"`
}

// StatusRunning, StatusSucceeded, StatusFailed, StatusCancelled and
// StatusUnknown build the five statuses.
func StatusRunning() OperationStatus { return OperationStatus{State: OperationRunning} }

// StatusSucceeded reports a stored terminal result.
func StatusSucceeded(p WorkerPayload) OperationStatus {
	return OperationStatus{State: OperationSucceeded, Payload: &p}
}

// StatusFailed reports a terminal failure with its reason.
func StatusFailed(reason string) OperationStatus {
	return OperationStatus{State: OperationFailed, Error: reason}
}

// StatusCancelled reports an acknowledged cancellation.
func StatusCancelled() OperationStatus { return OperationStatus{State: OperationCancelled} }

// StatusUnknown reports that the worker has no record of the operation.
func StatusUnknown() OperationStatus { return OperationStatus{State: OperationUnknown} }

// OperationReconcileRequest asks a worker for the status of one operation. It
// names the operation by its non-authorizing key, never the host's opaque id.
type OperationReconcileRequest struct {
	SessionID    string `json:"session_id"`
	RequestID    string `json:"request_id"`
	Tool         string `json:"tool"`
	OperationKey string `json:"operation_key"`
}

// OperationReconcileResult is the worker's answer, bound to the exact request.
type OperationReconcileResult struct {
	SessionID    string          `json:"session_id"`
	RequestID    string          `json:"request_id"`
	Tool         string          `json:"tool"`
	OperationKey string          `json:"operation_key"`
	Status       OperationStatus `json:"status"`
}
