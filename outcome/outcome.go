// Package outcome is how a tool's handler answers a call, wherever it
// runs: a Go handler in a worker agent (package workeragent) and a tool
// process written with the Go SDK (package splashtool) return the same
// values, so the two cannot drift apart. A nil error sends the Output; the
// error constructors below send the other statuses of protocol.Result.
// Both packages re-export these names.
package outcome

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/splashfabric/splashfabric/protocol"
)

// Output is the successful answer of a handler. Build it with Text, JSON
// or FromPayload; the zero Output is an empty text result.
type Output struct {
	payload protocol.WorkerPayload
}

// Text returns a successful text result.
func Text(s string) Output { return Output{payload: protocol.TextPayload(s)} }

// JSON returns a successful JSON result; raw must be one JSON value, or
// the call fails permanently instead of sending it.
func JSON(raw json.RawMessage) Output { return Output{payload: protocol.JSONPayload(raw)} }

// FromPayload returns a successful result carrying p as it is.
func FromPayload(p protocol.WorkerPayload) Output { return Output{payload: p} }

// Payload is the wire form of the output.
func (o Output) Payload() protocol.WorkerPayload {
	if o.payload.Format == "" {
		return protocol.TextPayload("")
	}
	return o.payload
}

// RetryableError asks the host for another attempt with the same
// idempotency key (status retry_transient). The host decides whether one
// remains; nothing retries on its own.
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

// PermanentError ends the operation with a failure that no retry can fix
// (status failed).
type PermanentError struct{ Err error }

// Permanent marks err as a terminal failure.
func Permanent(err error) error { return &PermanentError{Err: err} }

func (e *PermanentError) Error() string { return "permanent: " + errText(e.Err) }

// Unwrap returns the underlying error.
func (e *PermanentError) Unwrap() error { return e.Err }

// IndeterminateError reports that the handler cannot tell whether the
// call's effect happened (status indeterminate): the host fails the
// operation rather than retry it, and a redelivery replays this answer.
type IndeterminateError struct{ Err error }

// Indeterminate marks err as leaving the effect unknown.
func Indeterminate(err error) error { return &IndeterminateError{Err: err} }

func (e *IndeterminateError) Error() string { return "indeterminate: " + errText(e.Err) }

// Unwrap returns the underlying error.
func (e *IndeterminateError) Unwrap() error { return e.Err }

// CancelAcknowledgedError reports that the handler honoured a cancellation
// request: its effect and downstream I/O have stopped and no result will
// follow.
type CancelAcknowledgedError struct{}

// CancelAcknowledged is what a cancellable handler returns once, after a
// cancellation request, it has stopped its effect. Returned when nobody
// asked, it is answered as a failure.
func CancelAcknowledged() error { return &CancelAcknowledgedError{} }

func (e *CancelAcknowledgedError) Error() string { return "cancellation acknowledged" }

func errText(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}
