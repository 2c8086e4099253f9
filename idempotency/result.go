package idempotency

import (
	"encoding/json"
	"fmt"

	"github.com/splashfabric/splashfabric/protocol"
)

// DefaultMaxResultBytes bounds a stored result when the configuration gives
// no bound. It stays well under the NATS default max payload (1 MiB) so the
// encoded record always fits in one message.
const DefaultMaxResultBytes = 256 << 10

// Status is how a stored operation ended.
type Status string

// Terminal statuses. Retryable failures are never stored: a retry is a new
// attempt that must be able to run.
const (
	StatusSucceeded Status = "succeeded"
	StatusFailed    Status = "failed"
	StatusCancelled Status = "cancelled"
	// StatusIndeterminate records that the effect may or may not have
	// happened (a non-idempotent operation taken over from a lost owner).
	StatusIndeterminate Status = "indeterminate"
)

// Result is the terminal outcome stored by Finish and replayed by Begin.
type Result struct {
	Status  Status                  `json:"status"`
	Payload *protocol.WorkerPayload `json:"payload,omitempty"`
	Error   string                  `json:"error,omitempty"`
}

// Size is the number of bytes the result counts against the journal's
// bound: payload text or JSON plus the error text.
func (r Result) Size() int {
	n := len(r.Error)
	if r.Payload != nil {
		n += len(r.Payload.Text) + len(r.Payload.JSON)
	}
	return n
}

func validateResult(r Result, max int) error {
	switch r.Status {
	case StatusSucceeded, StatusFailed, StatusCancelled, StatusIndeterminate:
	default:
		return fmt.Errorf("%w: status %q", ErrInvalidResult, r.Status)
	}
	if p := r.Payload; p != nil {
		switch p.Format {
		case protocol.FormatText:
			if len(p.JSON) != 0 {
				return fmt.Errorf("%w: text payload carries json", ErrInvalidResult)
			}
		case protocol.FormatJSON:
			if p.Text != "" || !json.Valid(p.JSON) {
				return fmt.Errorf("%w: json payload is not one JSON value", ErrInvalidResult)
			}
		default:
			return fmt.Errorf("%w: payload format %q", ErrInvalidResult, p.Format)
		}
	}
	if n := r.Size(); n > max {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrResultTooLarge, n, max)
	}
	return nil
}
