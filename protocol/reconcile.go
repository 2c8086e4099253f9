package protocol

import (
	"fmt"

	"github.com/splashfabric/splashfabric/internal/clip"
)

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

// Validate checks a status: a known state, a valid payload exactly when
// succeeded, a non-empty reason exactly when failed, and neither otherwise.
// A status that carried a payload while running would let a worker smuggle a
// result past the terminal checks.
func (s OperationStatus) Validate() error {
	switch s.State {
	case OperationSucceeded:
		if s.Payload == nil {
			return fmt.Errorf("%w: succeeded status without payload", ErrInvalidMessage)
		}
		if s.Error != "" {
			return fmt.Errorf("%w: succeeded status with error", ErrInvalidMessage)
		}
		return s.Payload.Validate()
	case OperationFailed:
		if s.Error == "" {
			return fmt.Errorf("%w: failed status without a reason", ErrInvalidMessage)
		}
	case OperationRunning, OperationCancelled, OperationUnknown:
		if s.Error != "" {
			return fmt.Errorf("%w: %s status with error", ErrInvalidMessage, s.State)
		}
	default:
		return fmt.Errorf("%w: operation state %q", ErrInvalidMessage, clip.String(string(s.State), clip.Echo))
	}
	if s.Payload != nil {
		return fmt.Errorf("%w: %s status with payload", ErrInvalidMessage, s.State)
	}
	return nil
}

// Validate checks that every id is present and the tool name is legal.
func (r OperationReconcileRequest) Validate() error {
	return validateOperationRef(r.SessionID, r.RequestID, r.Tool, r.OperationKey)
}

// NewOperationReconcileResult builds a worker's answer and validates it, so
// a result that exists has non-empty ids, a legal tool name and a
// consistent status.
func NewOperationReconcileResult(sessionID, requestID, tool, operationKey string, status OperationStatus) (OperationReconcileResult, error) {
	r := OperationReconcileResult{
		SessionID:    sessionID,
		RequestID:    requestID,
		Tool:         tool,
		OperationKey: operationKey,
		Status:       status,
	}
	if err := r.Validate(); err != nil {
		return OperationReconcileResult{}, err
	}
	return r, nil
}

// Validate applies the rules of NewOperationReconcileResult to a result
// that arrived by other means, such as decoding.
func (r OperationReconcileResult) Validate() error {
	if err := validateOperationRef(r.SessionID, r.RequestID, r.Tool, r.OperationKey); err != nil {
		return err
	}
	return r.Status.Validate()
}

// Answers reports whether r is bound to exactly req: same session, request
// id, tool and operation key. A valid tag proves who wrote a result, not
// which question it answers; this check does.
func (r OperationReconcileResult) Answers(req OperationReconcileRequest) error {
	switch {
	case r.SessionID != req.SessionID:
		return fmt.Errorf("%w: session_id %q, asked %q", ErrInvalidMessage, r.SessionID, req.SessionID)
	case r.RequestID != req.RequestID:
		return fmt.Errorf("%w: request_id %q, asked %q", ErrInvalidMessage, r.RequestID, req.RequestID)
	case r.Tool != req.Tool:
		return fmt.Errorf("%w: tool %q, asked %q", ErrInvalidMessage, r.Tool, req.Tool)
	case r.OperationKey != req.OperationKey:
		return fmt.Errorf("%w: operation_key %q, asked %q", ErrInvalidMessage, r.OperationKey, req.OperationKey)
	}
	return nil
}

func validateOperationRef(sessionID, requestID, tool, operationKey string) error {
	switch {
	case sessionID == "":
		return fmt.Errorf("%w: empty session_id", ErrInvalidMessage)
	case requestID == "":
		return fmt.Errorf("%w: empty request_id", ErrInvalidMessage)
	case operationKey == "":
		return fmt.Errorf("%w: empty operation_key", ErrInvalidMessage)
	}
	return checkTool(tool)
}
