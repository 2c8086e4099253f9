package protocol

import (
	"fmt"
	"strconv"
)

// decodeMessage is the only way an authenticated message body becomes a
// WorkerMessage: strict decoding, then Validate.
//
// Strict decoding has two paths with one meaning. The fast path reads the
// message with the lexer and gives up (declines) at anything unusual: an
// unknown, duplicated or differently cased key, null, a key or string it
// cannot read exactly as encoding/json would. Only then does the body go
// through decodeStrict, whose answer is final. The fast path is therefore
// never more lenient than decodeStrict, and where it succeeds it builds the
// same value, which FuzzDecodeMessagePathsAgree checks.
func decodeMessage(raw []byte) (WorkerMessage, error) {
	m, ok := decodeMessageFast(raw)
	if !ok {
		var err error
		if m, err = decodeMessageStrict(raw); err != nil {
			return WorkerMessage{}, err
		}
	}
	if err := m.Validate(); err != nil {
		return WorkerMessage{}, err
	}
	return m, nil
}

// decodeMessageStrict is decodeMessage's slow path, kept apart so that its
// message, which encoding/json makes escape, is not the fast path's.
func decodeMessageStrict(raw []byte) (WorkerMessage, error) {
	var m WorkerMessage
	if err := decodeStrict(raw, &m); err != nil {
		return WorkerMessage{}, fmt.Errorf("%w: %v", ErrInvalidMessage, err)
	}
	return m, nil
}

// decodeMessageFast is the fast path of decodeMessage; see there.
func decodeMessageFast(raw []byte) (WorkerMessage, bool) {
	var m WorkerMessage
	l := lexer{data: raw}
	if !l.message(&m) || !l.atEnd() {
		return WorkerMessage{}, false
	}
	return m, true
}

// fieldSet records which keys of one object have been read, so that a
// duplicate key declines: encoding/json keeps the last value of a scalar but
// merges repeated objects, which is not worth copying.
type fieldSet uint16

func (s *fieldSet) first(i uint) bool {
	if *s&(1<<i) != 0 {
		return false
	}
	*s |= 1 << i
	return true
}

// The readers below mirror the struct tags in message.go and reconcile.go,
// one case per field. A field added there and not here only makes the fast
// path decline; TestDecodeMessageFastKnowsEveryField catches that.

func (l *lexer) message(m *WorkerMessage) bool {
	var seen fieldSet
	return l.object(func(key []byte) bool {
		switch string(key) {
		case "kind":
			return seen.first(0) && setName(l, &m.Kind, kindNames)
		case "invoke":
			return seen.first(1) && l.invoke(alloc(&m.Invoke))
		case "cancel":
			return seen.first(2) && l.cancel(alloc(&m.Cancel))
		case "chunk":
			return seen.first(3) && l.chunk(alloc(&m.Chunk))
		case "result":
			return seen.first(4) && l.result(alloc(&m.Result))
		case "cancel_disposition":
			return seen.first(5) && l.cancelReply(alloc(&m.CancelDisp))
		case "reconcile_operation":
			return seen.first(6) && l.reconcileRequest(alloc(&m.Reconcile))
		case "reconciled_operation":
			return seen.first(7) && l.reconcileResult(alloc(&m.Reconciled))
		case "stream_denied":
			return seen.first(8) && l.streamDenied(alloc(&m.Denied))
		}
		return false
	})
}

// alloc points *p at a new T for a reader to fill. A reader that declines
// leaves it half filled, which is harmless: the caller then discards the
// whole message.
func alloc[T any](p **T) *T {
	*p = new(T)
	return *p
}

func (l *lexer) invoke(v *Invoke) bool {
	var seen fieldSet
	return l.object(func(key []byte) bool {
		switch string(key) {
		case "request_id":
			return seen.first(0) && l.setString(&v.RequestID)
		case "tool":
			return seen.first(1) && l.setString(&v.Tool)
		case "input":
			return seen.first(2) && l.payload(&v.Input)
		case "call_index":
			return seen.first(3) && l.setUint64(&v.CallIndex)
		case "attempt":
			return seen.first(4) && l.setUint32(&v.Attempt)
		case "attempt_limit":
			return seen.first(5) && l.setUint32(&v.AttemptLimit)
		case "idempotency_key":
			return seen.first(6) && l.setString(&v.IdempotencyKey)
		case "output_limit":
			return seen.first(7) && l.setInt(&v.OutputLimit)
		case "stream":
			return seen.first(8) && l.streamLimits(alloc(&v.Stream))
		case "deadline_millis":
			return seen.first(9) && l.setInt64(&v.DeadlineMillis)
		case "contract":
			return seen.first(10) && l.contract(alloc(&v.Contract))
		}
		return false
	})
}

func (l *lexer) contract(v *Contract) bool {
	var seen fieldSet
	return l.object(func(key []byte) bool {
		switch string(key) {
		case "digest":
			return seen.first(0) && l.setString(&v.Digest)
		case "idempotent":
			return seen.first(1) && l.setBool(&v.Idempotent)
		case "cancellable":
			return seen.first(2) && l.setBool(&v.Cancellable)
		}
		return false
	})
}

func (l *lexer) streamLimits(v *StreamLimits) bool {
	var seen fieldSet
	return l.object(func(key []byte) bool {
		switch string(key) {
		case "max_chunks":
			return seen.first(0) && l.setInt(&v.MaxChunks)
		case "max_chunk_bytes":
			return seen.first(1) && l.setInt(&v.MaxChunkBytes)
		case "max_source_bytes":
			return seen.first(2) && l.setInt(&v.MaxSourceBytes)
		case "max_released_bytes":
			return seen.first(3) && l.setInt(&v.MaxReleasedBytes)
		case "used_chunks":
			return seen.first(4) && l.setInt(&v.UsedChunks)
		case "used_source_bytes":
			return seen.first(5) && l.setInt(&v.UsedSourceBytes)
		case "used_released_bytes":
			return seen.first(6) && l.setInt(&v.UsedReleasedBytes)
		}
		return false
	})
}

func (l *lexer) payload(v *WorkerPayload) bool {
	var seen fieldSet
	return l.object(func(key []byte) bool {
		switch string(key) {
		case "format":
			return seen.first(0) && setName(l, &v.Format, formatNames)
		case "text":
			return seen.first(1) && l.setString(&v.Text)
		case "json":
			if !seen.first(2) {
				return false
			}
			raw, ok := l.raw()
			v.JSON = raw
			return ok
		}
		return false
	})
}

func (l *lexer) streamDenied(v *StreamDenied) bool {
	var seen fieldSet
	return l.object(func(key []byte) bool {
		switch string(key) {
		case "request_id":
			return seen.first(0) && l.setString(&v.RequestID)
		case "tool":
			return seen.first(1) && l.setString(&v.Tool)
		case "attempt":
			return seen.first(2) && l.setUint32(&v.Attempt)
		case "reason":
			return seen.first(3) && l.setString(&v.Reason)
		}
		return false
	})
}

func (l *lexer) cancel(v *Cancel) bool {
	var seen fieldSet
	return l.object(func(key []byte) bool {
		switch string(key) {
		case "request_id":
			return seen.first(0) && l.setString(&v.RequestID)
		case "tool":
			return seen.first(1) && l.setString(&v.Tool)
		case "attempt":
			return seen.first(2) && l.setUint32(&v.Attempt)
		case "idempotency_key":
			return seen.first(3) && l.setString(&v.IdempotencyKey)
		}
		return false
	})
}

func (l *lexer) chunk(v *Chunk) bool {
	var seen fieldSet
	return l.object(func(key []byte) bool {
		switch string(key) {
		case "request_id":
			return seen.first(0) && l.setString(&v.RequestID)
		case "sequence":
			return seen.first(1) && l.setUint64(&v.Sequence)
		case "text":
			return seen.first(2) && l.setString(&v.Text)
		}
		return false
	})
}

func (l *lexer) result(v *Result) bool {
	var seen fieldSet
	return l.object(func(key []byte) bool {
		switch string(key) {
		case "request_id":
			return seen.first(0) && l.setString(&v.RequestID)
		case "attempt":
			return seen.first(1) && l.setUint32(&v.Attempt)
		case "status":
			return seen.first(2) && setName(l, &v.Status, resultStatusNames)
		case "payload":
			return seen.first(3) && l.payload(alloc(&v.Payload))
		case "error":
			return seen.first(4) && l.setString(&v.Error)
		case "retry_after_millis":
			return seen.first(5) && l.setInt64(&v.RetryAfterMillis)
		}
		return false
	})
}

func (l *lexer) cancelReply(v *CancelReply) bool {
	var seen fieldSet
	return l.object(func(key []byte) bool {
		switch string(key) {
		case "request_id":
			return seen.first(0) && l.setString(&v.RequestID)
		case "attempt":
			return seen.first(1) && l.setUint32(&v.Attempt)
		case "disposition":
			return seen.first(2) && setName(l, &v.Disposition, dispositionNames)
		}
		return false
	})
}

func (l *lexer) reconcileRequest(v *OperationReconcileRequest) bool {
	var seen fieldSet
	return l.object(func(key []byte) bool {
		switch string(key) {
		case "session_id":
			return seen.first(0) && l.setString(&v.SessionID)
		case "request_id":
			return seen.first(1) && l.setString(&v.RequestID)
		case "tool":
			return seen.first(2) && l.setString(&v.Tool)
		case "operation_key":
			return seen.first(3) && l.setString(&v.OperationKey)
		}
		return false
	})
}

func (l *lexer) reconcileResult(v *OperationReconcileResult) bool {
	var seen fieldSet
	return l.object(func(key []byte) bool {
		switch string(key) {
		case "session_id":
			return seen.first(0) && l.setString(&v.SessionID)
		case "request_id":
			return seen.first(1) && l.setString(&v.RequestID)
		case "tool":
			return seen.first(2) && l.setString(&v.Tool)
		case "operation_key":
			return seen.first(3) && l.setString(&v.OperationKey)
		case "status":
			return seen.first(4) && l.operationStatus(&v.Status)
		}
		return false
	})
}

func (l *lexer) operationStatus(v *OperationStatus) bool {
	var seen fieldSet
	return l.object(func(key []byte) bool {
		switch string(key) {
		case "state":
			return seen.first(0) && setName(l, &v.State, stateNames)
		case "payload":
			return seen.first(1) && l.payload(alloc(&v.Payload))
		case "error":
			return seen.first(2) && l.setString(&v.Error)
		}
		return false
	})
}

// Typed stores for the readers above.

// The names a message spells with a closed set of strings. setName hands
// out these constants instead of copying the bytes; any other value is read
// as a plain string, for Validate to refuse.
var (
	kindNames = []MessageKind{KindInvoke, KindCancel, KindChunk, KindResult,
		KindCancelDisposition, KindReconcileOperation, KindReconciledOperation, KindStreamDenied}
	formatNames       = []PayloadFormat{FormatText, FormatJSON}
	resultStatusNames = []ResultStatus{ResultSucceeded, ResultFailed, ResultRetryTransient,
		ResultRetryRateLimited, ResultIndeterminate}
	dispositionNames = []CancelDisposition{CancelAcknowledged, CancelTooLate, CancelUnsupported}
	stateNames       = []OperationState{OperationRunning, OperationSucceeded, OperationFailed,
		OperationCancelled, OperationUnknown}
)

func setName[T ~string](l *lexer, p *T, names []T) bool {
	save := l.off
	if key, ok := l.plainKey(); ok {
		for _, n := range names {
			if string(key) == string(n) {
				*p = n
				return true
			}
		}
	}
	l.off = save
	s, ok := l.quoted()
	*p = T(s)
	return ok
}

func (l *lexer) setString(p *string) bool {
	s, ok := l.quoted()
	*p = s
	return ok
}

func (l *lexer) setUint64(p *uint64) bool {
	n, ok := l.unsigned(64)
	*p = n
	return ok
}

func (l *lexer) setUint32(p *uint32) bool {
	n, ok := l.unsigned(32)
	*p = uint32(n)
	return ok
}

func (l *lexer) setInt64(p *int64) bool {
	n, ok := l.signed(64)
	*p = n
	return ok
}

func (l *lexer) setInt(p *int) bool {
	n, ok := l.signed(strconv.IntSize)
	*p = int(n)
	return ok
}

func (l *lexer) setBool(p *bool) bool {
	l.skipSpace()
	switch {
	case l.literal("true"):
		*p = true
		return true
	case l.literal("false"):
		*p = false
		return true
	}
	return false
}
