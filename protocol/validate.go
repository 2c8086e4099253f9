package protocol

import (
	"encoding/json"
	"fmt"

	"github.com/splashfabric/splashfabric/internal/clip"
)

// Validate checks that exactly the payload named by Kind is set and that the
// payload obeys its own rules (listed on each payload's Validate). Seal calls
// it before it spends a sequence number and Open calls it after the tag has
// been checked, so neither end ever acts on a message of the wrong shape.
func (m WorkerMessage) Validate() error {
	body, ok, known := m.body()
	if !known {
		return fmt.Errorf("%w: unknown kind %q", ErrInvalidMessage, clip.String(string(m.Kind), clip.Echo))
	}
	if !ok {
		return fmt.Errorf("%w: kind %q without its payload", ErrInvalidMessage, m.Kind)
	}
	if set := m.payloads(); set != 1 {
		return fmt.Errorf("%w: kind %q carries %d payloads", ErrInvalidMessage, m.Kind, set)
	}
	if err := body.Validate(); err != nil {
		return fmt.Errorf("%s: %w", m.Kind, err)
	}
	return nil
}

// validator is what every payload type implements.
type validator interface{ Validate() error }

// body returns the payload Kind names; ok is false when that payload is
// missing (a typed nil in the interface is never returned as usable) and
// known is false for a kind the protocol does not have.
func (m WorkerMessage) body() (v validator, ok, known bool) {
	switch m.Kind {
	case KindInvoke:
		return m.Invoke, m.Invoke != nil, true
	case KindCancel:
		return m.Cancel, m.Cancel != nil, true
	case KindChunk:
		return m.Chunk, m.Chunk != nil, true
	case KindResult:
		return m.Result, m.Result != nil, true
	case KindCancelDisposition:
		return m.CancelDisp, m.CancelDisp != nil, true
	case KindReconcileOperation:
		return m.Reconcile, m.Reconcile != nil, true
	case KindReconciledOperation:
		return m.Reconciled, m.Reconciled != nil, true
	case KindStreamDenied:
		return m.Denied, m.Denied != nil, true
	}
	return nil, false, false
}

// payloads counts the payload fields that are set.
func (m WorkerMessage) payloads() int {
	n := 0
	for _, set := range [...]bool{m.Invoke != nil, m.Cancel != nil, m.Chunk != nil, m.Result != nil,
		m.CancelDisp != nil, m.Reconcile != nil, m.Reconciled != nil, m.Denied != nil} {
		if set {
			n++
		}
	}
	return n
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
		return fmt.Errorf("%w: payload format %q", ErrInvalidMessage, clip.String(string(p.Format), clip.Echo))
	}
	return nil
}

// Validate checks that every limit is non-negative.
func (l StreamLimits) Validate() error {
	if l.MaxChunks < 0 || l.MaxChunkBytes < 0 || l.MaxSourceBytes < 0 || l.MaxReleasedBytes < 0 ||
		l.UsedChunks < 0 || l.UsedSourceBytes < 0 || l.UsedReleasedBytes < 0 {
		return fmt.Errorf("%w: negative stream limit %+v", ErrInvalidMessage, l)
	}
	return nil
}

// maxReasonBytes bounds a stream denial's reason.
const maxReasonBytes = 1024

// Validate checks a stream denial: request id present, a legal tool name,
// an attempt from 1 and a bounded reason.
func (v StreamDenied) Validate() error {
	switch {
	case v.RequestID == "":
		return fmt.Errorf("%w: empty request_id", ErrInvalidMessage)
	case v.Attempt < 1:
		return fmt.Errorf("%w: attempt %d, attempts count from 1", ErrInvalidMessage, v.Attempt)
	case len(v.Reason) > maxReasonBytes:
		return fmt.Errorf("%w: reason of %d bytes", ErrInvalidMessage, len(v.Reason))
	}
	return checkTool(v.Tool)
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
	if c := v.Contract; c != nil && (c.Digest == "" || len(c.Digest) > maxDigestBytes) {
		return fmt.Errorf("%w: contract digest of %d bytes", ErrInvalidMessage, len(c.Digest))
	}
	if len(v.TraceParent) > maxTraceParentBytes || len(v.TraceState) > maxTraceStateBytes {
		return fmt.Errorf("%w: trace context of %d+%d bytes", ErrInvalidMessage, len(v.TraceParent), len(v.TraceState))
	}
	return v.Input.Validate()
}

// maxTraceParentBytes and maxTraceStateBytes bound an invocation's trace
// context: a version 00 traceparent is 55 bytes, and a tracestate of more
// than 512 is dropped by the propagators anyway.
const (
	maxTraceParentBytes = 128
	maxTraceStateBytes  = 512
)

// maxDigestBytes bounds a contract digest; "sha256:" and 64 hex digits
// need 71.
const maxDigestBytes = 128

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
		return fmt.Errorf("%w: result status %q", ErrInvalidMessage, clip.String(string(v.Status), clip.Echo))
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
	return fmt.Errorf("%w: cancel disposition %q", ErrInvalidMessage, clip.String(string(v.Disposition), clip.Echo))
}
