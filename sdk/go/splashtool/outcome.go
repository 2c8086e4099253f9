package splashtool

import (
	"encoding/json"
	"errors"
	"math"
	"time"

	"github.com/splashfabric/splashfabric/outcome"
	"github.com/splashfabric/splashfabric/protocol"
)

// The answers a handler gives are package outcome's, the same values a
// Go handler in a worker agent returns.
type (
	// Output is the successful answer of a handler. Build it with Text or
	// JSON; the zero Output is an empty text result.
	Output = outcome.Output
	// RetryableError asks the host for another attempt under the same
	// idempotency key (status retry_transient). The host decides whether
	// one remains.
	RetryableError = outcome.RetryableError
	// RateLimitedError asks the host to retry no earlier than After from
	// now (status retry_rate_limited).
	RateLimitedError = outcome.RateLimitedError
	// PermanentError ends the operation with a failure no retry can fix
	// (status failed).
	PermanentError = outcome.PermanentError
	// IndeterminateError reports that the tool cannot tell whether its
	// effect happened (status indeterminate), so the host must not assume
	// either.
	IndeterminateError = outcome.IndeterminateError
	// CancelAcknowledgedError reports that the handler honoured a cancel:
	// its effect and downstream I/O have stopped and no result follows.
	CancelAcknowledgedError = outcome.CancelAcknowledgedError
)

// Text returns a successful text result.
func Text(s string) Output { return outcome.Text(s) }

// JSON returns a successful JSON result. raw must be exactly one JSON
// value; anything else is answered as a permanent failure, since sending
// it would break the session.
func JSON(raw json.RawMessage) Output { return outcome.JSON(raw) }

// Retryable marks err as a transient failure worth another attempt.
func Retryable(err error) error { return outcome.Retryable(err) }

// RateLimited marks err as a rate-limit rejection; the next attempt must
// not start before after has passed.
func RateLimited(after time.Duration, err error) error { return outcome.RateLimited(after, err) }

// Permanent marks err as a terminal failure.
func Permanent(err error) error { return outcome.Permanent(err) }

// Indeterminate marks err as leaving the effect unknown.
func Indeterminate(err error) error { return outcome.Indeterminate(err) }

// CancelAcknowledged is what a cancellable handler returns once, after its
// context was cancelled with cause ErrCancelled, it has stopped. Returned
// without a cancel from the host it is a permanent failure: nobody asked.
func CancelAcknowledged() error { return outcome.CancelAcknowledged() }

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
