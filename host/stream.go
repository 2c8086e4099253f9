package host

import (
	"fmt"
	"strconv"
)

// ExternalToolStreamChunk is one released chunk of progress output. Text
// is the redactor's output; SourceBytes and ReleasedBytes are this
// chunk's sizes before and after redaction. The runtime keeps only the
// counts.
type ExternalToolStreamChunk struct {
	ID            ExternalToolID
	Tool          string
	Index         int // 1-based, across all attempts
	Text          string
	SourceBytes   int
	ReleasedBytes int
}

// SetExternalStreamRedactor installs the trusted redactor whose output is
// the only chunk text released. It must be set before the tool's first
// start (ErrRedactorTooLate), so no operation changes redaction midway.
func (r *Runtime) SetExternalStreamRedactor(name string, f func(string) string) error {
	t := r.tools[name]
	switch {
	case t == nil:
		return fmt.Errorf("%w: %q", ErrUnknownTool, name)
	case !t.external:
		return fmt.Errorf("%w: %q", ErrNotExternal, name)
	case t.policy.Stream == nil:
		return fmt.Errorf("%w: %q", ErrStreamNotEnabled, name)
	case t.started:
		return fmt.Errorf("%w: %q", ErrRedactorTooLate, name)
	case f == nil:
		return fmt.Errorf("%w: nil redactor for %q", ErrInvalidInput, name)
	}
	t.redactor = f
	return nil
}

// PushExternalToolChunk releases one chunk of a claimed operation's
// progress output through the redactor. A chunk that would exceed any
// bound of the stream policy is refused with ErrStreamLimitExceeded and
// audited as stream_denied, leaving the counters unchanged: that is
// backpressure, and the adapter must stop forwarding rather than retry
// it. Chunks are refused before claim, while cancellation is requested,
// after the deadline and after the operation finished.
func (r *Runtime) PushExternalToolChunk(id ExternalToolID, text string) (ExternalToolStreamChunk, error) {
	op, err := r.live(id)
	if err != nil {
		return ExternalToolStreamChunk{}, err
	}
	sp := op.tool.policy.Stream
	if sp == nil {
		return ExternalToolStreamChunk{}, fmt.Errorf("%w: %q", ErrStreamNotEnabled, op.tool.policy.Name)
	}
	if reason := refusal(actChunk, op.state); reason != nil {
		return ExternalToolStreamChunk{}, r.stateError(op.id, op.tool.policy.Name, op.state, actChunk, reason)
	}
	if op.expired(r.clock.Now()) {
		return ExternalToolStreamChunk{}, fmt.Errorf("%w: %q", ErrDeadlineElapsed, id.String())
	}
	src := len(text)
	var bound string
	switch {
	case src > sp.MaxChunkBytes:
		bound = "chunk of " + strconv.Itoa(src) + " bytes exceeds max_chunk_bytes " + strconv.Itoa(sp.MaxChunkBytes)
	case op.chunks+1 > sp.MaxChunks:
		bound = "chunk " + strconv.Itoa(op.chunks+1) + " exceeds max_chunks " + strconv.Itoa(sp.MaxChunks)
	case op.sourceBytes+src > sp.MaxSourceBytes:
		bound = "source bytes " + strconv.Itoa(op.sourceBytes+src) + " exceed max_source_bytes " + strconv.Itoa(sp.MaxSourceBytes)
	}
	released := text
	if bound == "" && op.tool.redactor != nil {
		released = op.tool.redactor(text)
	}
	if bound == "" && op.releasedBytes+len(released) > sp.MaxReleasedBytes {
		bound = "released bytes " + strconv.Itoa(op.releasedBytes+len(released)) + " exceed max_released_bytes " + strconv.Itoa(sp.MaxReleasedBytes)
	}
	if bound != "" {
		r.record(op, AuditStreamDenied, bound, src, 0)
		return ExternalToolStreamChunk{}, fmt.Errorf("%w: %s: %s", ErrStreamLimitExceeded, id, bound)
	}
	op.chunks++
	op.sourceBytes += src
	op.releasedBytes += len(released)
	r.record(op, AuditStreamed, "released "+strconv.Itoa(len(released))+" bytes", src, 0)
	return ExternalToolStreamChunk{ID: op.id, Tool: op.tool.policy.Name, Index: op.chunks, Text: released, SourceBytes: src, ReleasedBytes: len(released)}, nil
}

// RestoreStreamUsage raises a live operation's stream counters to what an
// earlier run of the session recorded it had streamed, so its bounds go on
// spanning every attempt after a restart. Counters already higher stay;
// the audit gets one streamed event for the restored difference. It
// refuses an operation without a stream, or counts below zero.
func (r *Runtime) RestoreStreamUsage(id ExternalToolID, used StreamUsage) error {
	op, err := r.live(id)
	if err != nil {
		return err
	}
	if op.tool.policy.Stream == nil {
		return fmt.Errorf("%w: %q", ErrStreamNotEnabled, op.tool.policy.Name)
	}
	if used.Chunks < 0 || used.SourceBytes < 0 || used.ReleasedBytes < 0 {
		return fmt.Errorf("%w: negative stream usage %+v", ErrInvalidInput, used)
	}
	chunks, src := used.Chunks-op.chunks, used.SourceBytes-op.sourceBytes
	op.chunks = max(op.chunks, used.Chunks)
	op.sourceBytes = max(op.sourceBytes, used.SourceBytes)
	op.releasedBytes = max(op.releasedBytes, used.ReleasedBytes)
	if chunks > 0 {
		r.record(op, AuditStreamed, "restored "+strconv.Itoa(chunks)+" chunks streamed before a restart", max(src, 0), 0)
	}
	return nil
}
