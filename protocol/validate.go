package protocol

import (
	"encoding/json"
	"fmt"
)

// Validate checks that exactly the payload named by Kind is set and that the
// payload obeys its own rules (listed on each payload's Validate). Seal calls
// it before it spends a sequence number and Open calls it after the tag has
// been checked, so neither end ever acts on a message of the wrong shape.
func (m WorkerMessage) Validate() error {
	set := 0
	for _, p := range []bool{m.Invoke != nil, m.Cancel != nil, m.Chunk != nil, m.Result != nil,
		m.CancelDisp != nil, m.Reconcile != nil, m.Reconciled != nil} {
		if p {
			set++
		}
	}
	var err error
	var ok bool
	switch m.Kind {
	case KindInvoke:
		ok = m.Invoke != nil
		if ok {
			err = m.Invoke.Validate()
		}
	case KindCancel:
		ok = m.Cancel != nil
		if ok {
			err = m.Cancel.Validate()
		}
	case KindChunk:
		ok = m.Chunk != nil
		if ok {
			err = m.Chunk.Validate()
		}
	case KindResult:
		ok = m.Result != nil
		if ok {
			err = m.Result.Validate()
		}
	case KindCancelDisposition:
		ok = m.CancelDisp != nil
		if ok {
			err = m.CancelDisp.Validate()
		}
	case KindReconcileOperation:
		ok = m.Reconcile != nil
		if ok {
			err = m.Reconcile.Validate()
		}
	case KindReconciledOperation:
		ok = m.Reconciled != nil
		if ok {
			err = m.Reconciled.Validate()
		}
	default:
		return fmt.Errorf("%w: unknown kind %q", ErrInvalidMessage, truncateString(string(m.Kind)))
	}
	switch {
	case !ok:
		return fmt.Errorf("%w: kind %q without its payload", ErrInvalidMessage, m.Kind)
	case set != 1:
		return fmt.Errorf("%w: kind %q carries %d payloads", ErrInvalidMessage, m.Kind, set)
	case err != nil:
		return fmt.Errorf("%s: %w", m.Kind, err)
	}
	return nil
}

// Validate checks the format: a text payload carries no JSON, and a JSON
// payload carries no text and exactly one valid JSON value.
func (p WorkerPayload) Validate() error {
	switch p.Format {
	case FormatText:
		if len(p.JSON) != 0 {
			return fmt.Errorf("%w: text payload carries json", ErrInvalidMessage)
		}
	case FormatJSON:
		if p.Text != "" {
			return fmt.Errorf("%w: json payload carries text", ErrInvalidMessage)
		}
		if !json.Valid(p.JSON) {
			return fmt.Errorf("%w: json payload is not one JSON value", ErrInvalidMessage)
		}
	default:
		return fmt.Errorf("%w: payload format %q", ErrInvalidMessage, truncateString(string(p.Format)))
	}
	return nil
}

// Validate checks that every limit is non-negative.
func (l StreamLimits) Validate() error {
	if l.MaxChunks < 0 || l.MaxChunkBytes < 0 || l.MaxSourceBytes < 0 || l.MaxReleasedBytes < 0 {
		return fmt.Errorf("%w: negative stream limit %+v", ErrInvalidMessage, l)
	}
	return nil
}

// Validate checks an invocation: request id and idempotency key present, a
// legal tool name, a valid input, 1 <= Attempt <= AttemptLimit, and no
// negative limits or deadline.
func (v Invoke) Validate() error {
	switch {
	case v.RequestID == "":
		return fmt.Errorf("%w: empty request_id", ErrInvalidMessage)
	case v.IdempotencyKey == "":
		return fmt.Errorf("%w: empty idempotency_key", ErrInvalidMessage)
	case v.Attempt < 1:
		return fmt.Errorf("%w: attempt %d, attempts count from 1", ErrInvalidMessage, v.Attempt)
	case v.AttemptLimit < v.Attempt:
		return fmt.Errorf("%w: attempt %d beyond attempt_limit %d", ErrInvalidMessage, v.Attempt, v.AttemptLimit)
	case v.OutputLimit < 0:
		return fmt.Errorf("%w: negative output_limit %d", ErrInvalidMessage, v.OutputLimit)
	case v.DeadlineMillis < 0:
		return fmt.Errorf("%w: negative deadline_millis %d", ErrInvalidMessage, v.DeadlineMillis)
	}
	if err := checkTool(v.Tool); err != nil {
		return err
	}
	if v.Stream != nil {
		if err := v.Stream.Validate(); err != nil {
			return err
		}
	}
	return v.Input.Validate()
}

// Validate checks a cancellation: request id and idempotency key present, a
// legal tool name and an attempt from 1.
func (v Cancel) Validate() error {
	switch {
	case v.RequestID == "":
		return fmt.Errorf("%w: empty request_id", ErrInvalidMessage)
	case v.IdempotencyKey == "":
		return fmt.Errorf("%w: empty idempotency_key", ErrInvalidMessage)
	case v.Attempt < 1:
		return fmt.Errorf("%w: attempt %d, attempts count from 1", ErrInvalidMessage, v.Attempt)
	}
	return checkTool(v.Tool)
}

// Validate checks a chunk: request id present and a sequence from 1. Empty
// text is allowed; the stream policy, not the protocol, decides whether an
// empty chunk counts.
func (v Chunk) Validate() error {
	switch {
	case v.RequestID == "":
		return fmt.Errorf("%w: empty request_id", ErrInvalidMessage)
	case v.Sequence < 1:
		return fmt.Errorf("%w: chunk sequence %d, chunks count from 1", ErrInvalidMessage, v.Sequence)
	}
	return nil
}

// Validate checks a result: request id present, an attempt from 1, a known
// status; a payload exactly when the status is succeeded; a reason when it
// is failed; a retry-after only with retry_rate_limited.
func (v Result) Validate() error {
	switch {
	case v.RequestID == "":
		return fmt.Errorf("%w: empty request_id", ErrInvalidMessage)
	case v.Attempt < 1:
		return fmt.Errorf("%w: attempt %d, attempts count from 1", ErrInvalidMessage, v.Attempt)
	case v.RetryAfterMillis < 0:
		return fmt.Errorf("%w: negative retry_after_millis %d", ErrInvalidMessage, v.RetryAfterMillis)
	case v.RetryAfterMillis != 0 && v.Status != ResultRetryRateLimited:
		return fmt.Errorf("%w: retry_after_millis with status %q", ErrInvalidMessage, v.Status)
	}
	switch v.Status {
	case ResultSucceeded:
		if v.Payload == nil {
			return fmt.Errorf("%w: succeeded result without payload", ErrInvalidMessage)
		}
		if v.Error != "" {
			return fmt.Errorf("%w: succeeded result with error", ErrInvalidMessage)
		}
		return v.Payload.Validate()
	case ResultFailed:
		if v.Error == "" {
			return fmt.Errorf("%w: failed result without a reason", ErrInvalidMessage)
		}
	case ResultRetryTransient, ResultRetryRateLimited, ResultIndeterminate:
	default:
		return fmt.Errorf("%w: result status %q", ErrInvalidMessage, truncateString(string(v.Status)))
	}
	if v.Payload != nil {
		return fmt.Errorf("%w: %s result with payload", ErrInvalidMessage, v.Status)
	}
	return nil
}

// Validate checks a cancel reply: request id present, an attempt from 1 and
// a known disposition.
func (v CancelReply) Validate() error {
	switch {
	case v.RequestID == "":
		return fmt.Errorf("%w: empty request_id", ErrInvalidMessage)
	case v.Attempt < 1:
		return fmt.Errorf("%w: attempt %d, attempts count from 1", ErrInvalidMessage, v.Attempt)
	}
	switch v.Disposition {
	case CancelAcknowledged, CancelTooLate, CancelUnsupported:
		return nil
	}
	return fmt.Errorf("%w: cancel disposition %q", ErrInvalidMessage, truncateString(string(v.Disposition)))
}
