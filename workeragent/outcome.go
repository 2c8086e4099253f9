package workeragent

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/splashfabric/splashfabric/outcome"
	"github.com/splashfabric/splashfabric/protocol"
)

// The answers a handler gives are package outcome's, shared with tools
// written with the Go SDK (package splashtool).
type (
	// Output is the successful terminal result of a handler. Build it
	// with Result or JSONResult; the zero Output is an empty text result.
	Output = outcome.Output
	// RetryableError asks the host to retry the call as a new attempt
	// with the same idempotency key (status retry_transient). The host
	// decides whether attempts remain; the agent never retries on its own.
	RetryableError = outcome.RetryableError
	// RateLimitedError asks the host to retry no earlier than After from
	// now (status retry_rate_limited).
	RateLimitedError = outcome.RateLimitedError
	// PermanentError ends the operation with a failure that no retry can
	// fix (status failed).
	PermanentError = outcome.PermanentError
	// IndeterminateError reports that the handler cannot tell whether the
	// call's effect happened (status indeterminate): the host fails the
	// operation rather than retry it, and a redelivery replays this answer.
	IndeterminateError = outcome.IndeterminateError
	// CancelAcknowledgedError reports that the handler honoured a
	// cancellation request: its effect and downstream I/O have stopped and
	// no result will follow.
	CancelAcknowledgedError = outcome.CancelAcknowledgedError
)

// Result returns a successful text result.
func Result(text string) Output { return outcome.Text(text) }

// JSONResult returns a successful JSON result; raw must be one JSON value or
// the call fails permanently instead of sending it.
func JSONResult(raw json.RawMessage) Output { return outcome.JSON(raw) }

// Retryable marks err as a transient failure worth another attempt.
func Retryable(err error) error { return outcome.Retryable(err) }

// RateLimited marks err as a rate-limit rejection; the next attempt must not
// start before after has passed.
func RateLimited(after time.Duration, err error) error { return outcome.RateLimited(after, err) }

// Permanent marks err as a terminal failure.
func Permanent(err error) error { return outcome.Permanent(err) }

// Indeterminate marks err as an unknown effect.
func Indeterminate(err error) error { return outcome.Indeterminate(err) }

// CancelAcknowledged is what a cancellable handler returns once, after a
// cancellation request, it has stopped its effect. Returning it without a
// pending request (or from a tool not declared cancellable) is treated
// as a plain failure, since the host never asked.
func CancelAcknowledged() error { return outcome.CancelAcknowledged() }

// HandBackError asks the agent to hand the call back to the stream for
// another delivery of the same attempt, which the journal lets run again
// only for a tool declared idempotent. On the last delivery the stream
// allows it is answered as a failure instead, so the call still ends.
type HandBackError struct{ Err error }

// HandBack marks err as a reason to deliver the call again.
func HandBack(err error) error { return &HandBackError{Err: err} }

func (e *HandBackError) Error() string { return "hand back: " + errText(e.Err) }

// Unwrap returns the underlying error.
func (e *HandBackError) Unwrap() error { return e.Err }

func errText(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// verdictKind is the agent's reading of what a handler returned.
type verdictKind uint8

const (
	verdictSucceeded verdictKind = iota + 1
	verdictFailed
	verdictRetryTransient
	verdictRetryRateLimited
	verdictCancelled
	// verdictGiveBack: the call stopped because the agent is draining (or
	// its handler asked for it with HandBack); it is handed back for
	// redelivery rather than answered.
	verdictGiveBack
	verdictIndeterminate
)

type verdict struct {
	kind       verdictKind
	payload    protocol.WorkerPayload
	err        string
	retryAfter time.Duration
}

// label names the verdict for Observer.HandlerDone.
func (v verdict) label() string {
	switch v.kind {
	case verdictSucceeded:
		return OutcomeSucceeded
	case verdictRetryTransient:
		return OutcomeRetryTransient
	case verdictRetryRateLimited:
		return OutcomeRetryRateLimited
	case verdictCancelled:
		return OutcomeCancelled
	case verdictGiveBack:
		return OutcomeHandedBack
	case verdictIndeterminate:
		return OutcomeIndeterminate
	}
	return OutcomeFailed
}

// classify maps a handler's return values to a verdict. A plain error is
// transient, as in asynq and river: the host's attempt limit bounds it, and
// a handler that knows better says Permanent. cancelAsked and draining tell
// how the context ended, which decides what a bare context error means.
func classify(out Output, err error, cancelAsked, draining bool) verdict {
	if err == nil {
		p := out.Payload()
		if verr := p.Validate(); verr != nil {
			return verdict{kind: verdictFailed, err: "invalid handler output: " + verr.Error()}
		}
		return verdict{kind: verdictSucceeded, payload: p}
	}
	var (
		ack  *CancelAcknowledgedError
		perm *PermanentError
		rl   *RateLimitedError
		rt   *RetryableError
		ind  *IndeterminateError
		hb   *HandBackError
	)
	switch {
	case errors.As(err, &ind):
		// Before the drain case: a call whose effect is unknown must not
		// be handed to a new holder as if nothing ran.
		return verdict{kind: verdictIndeterminate, err: errText(ind.Err)}
	case errors.As(err, &hb):
		return verdict{kind: verdictGiveBack, err: errText(hb.Err)}
	case errors.As(err, &ack):
		if cancelAsked {
			return verdict{kind: verdictCancelled}
		}
		if draining {
			return verdict{kind: verdictGiveBack}
		}
		return verdict{kind: verdictFailed, err: "cancellation acknowledged without a request"}
	case cancelAsked && (errors.Is(err, context.Canceled) || errors.Is(err, ErrCancelRequested)):
		// The Go idiom: a handler that stops for its context returns the
		// context's error. After a cancellation request that is the
		// acknowledgement the host waits for; read as a transient
		// failure, it left the host a retry it must refuse.
		return verdict{kind: verdictCancelled}
	case errors.As(err, &perm):
		return verdict{kind: verdictFailed, err: errText(perm.Err)}
	case draining:
		// Any other failure during a drain means the handler stopped for
		// the shutdown: the next holder runs the call again.
		return verdict{kind: verdictGiveBack}
	case errors.As(err, &rl):
		after := max(rl.After, 0)
		return verdict{kind: verdictRetryRateLimited, err: errText(rl.Err), retryAfter: after}
	case errors.As(err, &rt):
		return verdict{kind: verdictRetryTransient, err: errText(rt.Err)}
	default:
		return verdict{kind: verdictRetryTransient, err: err.Error()}
	}
}
