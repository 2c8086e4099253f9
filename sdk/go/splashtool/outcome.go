package splashtool

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/splashfabric/splashfabric/protocol"
)

// Output is the successful answer of a handler. Build it with Text or JSON;
// the zero Output is an empty text result.
type Output struct {
	payload protocol.WorkerPayload
}

// Text returns a successful text result.
func Text(s string) Output { return Output{payload: protocol.TextPayload(s)} }

// JSON returns a successful JSON result. raw must be exactly one JSON
// value; anything else is answered as a permanent failure, since sending
// it would break the session.
func JSON(raw json.RawMessage) Output { return Output{payload: protocol.JSONPayload(raw)} }

// Payload is the wire form of the output.
func (o Output) Payload() protocol.WorkerPayload {
	if o.payload.Format == "" {
		return protocol.TextPayload("")
	}
	return o.payload
}

// RetryableError asks the host for another attempt under the same
// idempotency key (status retry_transient). The host decides whether one
// remains.
type RetryableError struct{ Err error }

// Retryable marks err as a transient failure worth another attempt.
func Retryable(err error) error { return &RetryableError{Err: err} }

func (e *RetryableError) Error() string { return "retryable: " + errText(e.Err) }

// Unwrap returns the underlying error.
func (e *RetryableError) Unwrap() error { return e.Err }

// RateLimitedError asks the host to retry no earlier than After from now
// (status retry_rate_limited).
type RateLimitedError struct {
	After time.Duration
	Err   error
}

// RateLimited marks err as a rate-limit rejection; the next attempt must
// not start before after has passed.
func RateLimited(after time.Duration, err error) error {
	return &RateLimitedError{After: after, Err: err}
}

func (e *RateLimitedError) Error() string {
	return fmt.Sprintf("rate limited (retry after %v): %s", e.After, errText(e.Err))
}

// Unwrap returns the underlying error.
func (e *RateLimitedError) Unwrap() error { return e.Err }

// PermanentError ends the operation with a failure no retry can fix
// (status failed).
type PermanentError struct{ Err error }

// Permanent marks err as a terminal failure.
func Permanent(err error) error { return &PermanentError{Err: err} }

func (e *PermanentError) Error() string { return "permanent: " + errText(e.Err) }

// Unwrap returns the underlying error.
func (e *PermanentError) Unwrap() error { return e.Err }

// IndeterminateError reports that the tool cannot tell whether its effect
// happened (status indeterminate), so the host must not assume either.
type IndeterminateError struct{ Err error }

// Indeterminate marks err as leaving the effect unknown.
func Indeterminate(err error) error { return &IndeterminateError{Err: err} }

func (e *IndeterminateError) Error() string { return "indeterminate: " + errText(e.Err) }

// Unwrap returns the underlying error.
func (e *IndeterminateError) Unwrap() error { return e.Err }

// CancelAcknowledgedError reports that the handler honoured a cancel: its
// effect and downstream I/O have stopped and no result follows.
type CancelAcknowledgedError struct{}

// CancelAcknowledged is what a cancellable handler returns once, after its
// context was cancelled with cause ErrCancelled, it has stopped. Returned
// without a cancel from the host it is a permanent failure: nobody asked.
func CancelAcknowledged() error { return &CancelAcknowledgedError{} }

func (e *CancelAcknowledgedError) Error() string { return "cancellation acknowledged" }

func errText(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// isAck reports whether err acknowledges a cancel.
func isAck(err error) bool {
	var ack *CancelAcknowledgedError
	return errors.As(err, &ack)
}

// result maps what a handler returned to its terminal Result. A plain error
// is transient, as in workeragent: the host's attempt limit bounds it, and a
// handler that knows better says Permanent.
func result(c *Call, out Output, err error) protocol.Result {
	r := protocol.Result{RequestID: c.RequestID, Attempt: c.Attempt}
	var (
		perm *PermanentError
		ind  *IndeterminateError
		rl   *RateLimitedError
		rt   *RetryableError
	)
	switch {
	case err == nil:
		p := out.Payload()
		if verr := p.Validate(); verr != nil {
			r.Status, r.Error = protocol.ResultFailed, "invalid handler output: "+verr.Error()
			break
		}
		r.Status, r.Payload = protocol.ResultSucceeded, &p
	case isAck(err):
		r.Status, r.Error = protocol.ResultFailed, "cancellation acknowledged without a cancel"
	case errors.As(err, &perm):
		r.Status, r.Error = protocol.ResultFailed, errText(perm.Err)
	case errors.As(err, &ind):
		r.Status, r.Error = protocol.ResultIndeterminate, errText(ind.Err)
	case errors.As(err, &rl):
		r.Status, r.Error = protocol.ResultRetryRateLimited, errText(rl.Err)
		r.RetryAfterMillis = ceilMillis(rl.After)
	case errors.As(err, &rt):
		r.Status, r.Error = protocol.ResultRetryTransient, errText(rt.Err)
	default:
		r.Status, r.Error = protocol.ResultRetryTransient, err.Error()
	}
	// A failed result must say why; an empty reason would not validate.
	if r.Status != protocol.ResultSucceeded && r.Error == "" {
		r.Error = string(r.Status)
	}
	return r
}

// ceilMillis rounds up, so a rate-limited retry never starts early.
func ceilMillis(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	ms := d / time.Millisecond
	if d%time.Millisecond != 0 && ms < math.MaxInt64 {
		ms++
	}
	return int64(ms)
}
