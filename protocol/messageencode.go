package protocol

import (
	"encoding/json"
	"strconv"
)

// encodeMessage is the only way Seal turns a WorkerMessage into the bytes a
// tag covers.
//
// Like decoding, encoding has two paths with one output. The fast path
// writes the frames of the hot path (invoke, cancel, chunk, result, cancel
// disposition) by hand and declines whatever it cannot write byte for byte
// as encoding/json would: a JSON payload (which encoding/json compacts and
// HTML-escapes), a reconcile message, or a string holding anything but
// printable ASCII that needs no escape. Only then does encoding/json run.
// The output is therefore identical either way, which
// FuzzEncodeMessagePathsAgree checks; the gain is the reflection and the
// allocations every sealed frame would otherwise pay.
func encodeMessage(m *WorkerMessage) ([]byte, error) {
	if b, ok := appendMessageFast(make([]byte, 0, 192), m); ok {
		return b, nil
	}
	return json.Marshal(m)
}

// appendMessageFast is encodeMessage's fast path; see there.
func appendMessageFast(b []byte, m *WorkerMessage) ([]byte, bool) {
	if m.Reconcile != nil || m.Reconciled != nil || m.Denied != nil {
		return b, false
	}
	w := objWriter{b: b, ok: true}
	w.open()
	w.str("kind", string(m.Kind))
	if v := m.Invoke; v != nil {
		w.key("invoke")
		w.invoke(v)
	}
	if v := m.Cancel; v != nil {
		w.key("cancel")
		w.cancel(v)
	}
	if v := m.Chunk; v != nil {
		w.key("chunk")
		w.chunk(v)
	}
	if v := m.Result; v != nil {
		w.key("result")
		w.result(v)
	}
	if v := m.CancelDisp; v != nil {
		w.key("cancel_disposition")
		w.cancelReply(v)
	}
	w.close()
	return w.b, w.ok
}

// objWriter appends JSON objects field by field in struct order, as
// encoding/json lays them out. ok turns false at the first value it will
// not write exactly as encoding/json would; the caller then discards b.
type objWriter struct {
	b  []byte
	ok bool
	// more is set once an object has a field, so the next one needs a
	// comma; open and close keep it right across nesting.
	more bool
}

func (w *objWriter) open() {
	w.b = append(w.b, '{')
	w.more = false
}

func (w *objWriter) close() {
	w.b = append(w.b, '}')
	w.more = true
}

func (w *objWriter) key(k string) {
	if w.more {
		w.b = append(w.b, ',')
	}
	w.b = append(w.b, '"')
	w.b = append(w.b, k...)
	w.b = append(w.b, '"', ':')
	w.more = true
}

func (w *objWriter) str(k, v string) {
	w.key(k)
	if !plainJSONString(v) {
		w.ok = false
		return
	}
	w.b = append(w.b, '"')
	w.b = append(w.b, v...)
	w.b = append(w.b, '"')
}

func (w *objWriter) uint(k string, v uint64) {
	w.key(k)
	w.b = strconv.AppendUint(w.b, v, 10)
}

func (w *objWriter) bool(k string, v bool) {
	w.key(k)
	w.b = strconv.AppendBool(w.b, v)
}

func (w *objWriter) int(k string, v int64) {
	w.key(k)
	w.b = strconv.AppendInt(w.b, v, 10)
}

func (w *objWriter) invoke(v *Invoke) {
	w.open()
	w.str("request_id", v.RequestID)
	w.str("tool", v.Tool)
	w.key("input")
	w.payload(&v.Input)
	w.uint("call_index", v.CallIndex)
	w.uint("attempt", uint64(v.Attempt))
	w.uint("attempt_limit", uint64(v.AttemptLimit))
	w.str("idempotency_key", v.IdempotencyKey)
	w.int("output_limit", int64(v.OutputLimit))
	if s := v.Stream; s != nil {
		w.key("stream")
		w.open()
		w.int("max_chunks", int64(s.MaxChunks))
		w.int("max_chunk_bytes", int64(s.MaxChunkBytes))
		w.int("max_source_bytes", int64(s.MaxSourceBytes))
		w.int("max_released_bytes", int64(s.MaxReleasedBytes))
		if s.UsedChunks != 0 {
			w.int("used_chunks", int64(s.UsedChunks))
		}
		if s.UsedSourceBytes != 0 {
			w.int("used_source_bytes", int64(s.UsedSourceBytes))
		}
		if s.UsedReleasedBytes != 0 {
			w.int("used_released_bytes", int64(s.UsedReleasedBytes))
		}
		w.close()
	}
	if v.DeadlineMillis != 0 {
		w.int("deadline_millis", v.DeadlineMillis)
	}
	if c := v.Contract; c != nil {
		w.key("contract")
		w.open()
		w.str("digest", c.Digest)
		w.bool("idempotent", c.Idempotent)
		w.bool("cancellable", c.Cancellable)
		w.close()
	}
	w.close()
}

func (w *objWriter) cancel(v *Cancel) {
	w.open()
	w.str("request_id", v.RequestID)
	w.str("tool", v.Tool)
	w.uint("attempt", uint64(v.Attempt))
	w.str("idempotency_key", v.IdempotencyKey)
	w.close()
}

func (w *objWriter) chunk(v *Chunk) {
	w.open()
	w.str("request_id", v.RequestID)
	w.uint("sequence", v.Sequence)
	w.str("text", v.Text)
	w.close()
}

func (w *objWriter) result(v *Result) {
	w.open()
	w.str("request_id", v.RequestID)
	w.uint("attempt", uint64(v.Attempt))
	w.str("status", string(v.Status))
	if v.Payload != nil {
		w.key("payload")
		w.payload(v.Payload)
	}
	if v.Error != "" {
		w.str("error", v.Error)
	}
	if v.RetryAfterMillis != 0 {
		w.int("retry_after_millis", v.RetryAfterMillis)
	}
	w.close()
}

func (w *objWriter) cancelReply(v *CancelReply) {
	w.open()
	w.str("request_id", v.RequestID)
	w.uint("attempt", uint64(v.Attempt))
	w.str("disposition", string(v.Disposition))
	w.close()
}

func (w *objWriter) payload(p *WorkerPayload) {
	if len(p.JSON) != 0 {
		w.ok = false
		return
	}
	w.open()
	w.str("format", string(p.Format))
	if p.Text != "" {
		w.str("text", p.Text)
	}
	w.close()
}

// plainJSONString reports whether s is printable ASCII that encoding/json
// copies verbatim between quotes: no quote, backslash or control byte, and
// none of the <, > and & it escapes for HTML.
func plainJSONString(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c >= 0x7f:
			return false
		case c == '"' || c == '\\' || c == '<' || c == '>' || c == '&':
			return false
		}
	}
	return true
}
