package idempotency

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/splashfabric/splashfabric/protocol"
)

// Both journals store a record as its JSON encoding, so the memory journal
// round-trips exactly what the KV journal does (times lose their monotonic
// reading, results are deep copies).
//
// encodeRecord writes the bytes encoding/json would (with HTML escaping
// off: payload text is stored as written, since escaping would only
// inflate it against the message size limit), field by field: every
// journal write encodes a record, and reflection and the time marshaller
// made encoding/json the largest cost of a write on the worker's side.
// TestEncodeRecordMatchesEncodingJSON holds the two to the same bytes and
// fails when Record, Result or protocol.WorkerPayload gain a field.
// Decoding stays with encoding/json: it runs only on the read paths
// (duplicates, conflicts).

func encodeRecord(r Record) ([]byte, error) {
	b := make([]byte, 0, recordSizeHint(r))
	b = append(b, `{"key":`...)
	b = appendString(b, r.Key)
	b = append(b, `,"state":`...)
	b = appendString(b, string(r.State))
	if r.Owner != "" {
		b = append(b, `,"owner":`...)
		b = appendString(b, r.Owner)
	}
	if r.PreviousOwner != "" {
		b = append(b, `,"previous_owner":`...)
		b = appendString(b, r.PreviousOwner)
	}
	b = append(b, `,"claims":`...)
	b = strconv.AppendUint(b, uint64(r.Claims), 10)
	if r.Takeovers != 0 {
		b = append(b, `,"takeovers":`...)
		b = strconv.AppendUint(b, uint64(r.Takeovers), 10)
	}
	if r.TakenOver {
		b = append(b, `,"taken_over":true`...)
	}
	var err error
	if !r.LeaseExpiresAt.IsZero() {
		b = append(b, `,"lease_expires_at":`...)
		if b, err = appendTime(b, r.LeaseExpiresAt); err != nil {
			return nil, err
		}
	}
	b = append(b, `,"created_at":`...)
	if b, err = appendTime(b, r.CreatedAt); err != nil {
		return nil, err
	}
	b = append(b, `,"updated_at":`...)
	if b, err = appendTime(b, r.UpdatedAt); err != nil {
		return nil, err
	}
	if r.Result != nil {
		b = append(b, `,"result":`...)
		if b, err = appendResult(b, *r.Result); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// recordSizeHint sizes the buffer so that one allocation usually suffices.
func recordSizeHint(r Record) int {
	n := 256 + len(r.Key) + len(r.Owner) + len(r.PreviousOwner)
	if r.Result != nil {
		n += r.Result.Size() + r.Result.Size()/8
	}
	return n
}

func appendResult(b []byte, r Result) ([]byte, error) {
	b = append(b, `{"status":`...)
	b = appendString(b, string(r.Status))
	if p := r.Payload; p != nil {
		b = append(b, `,"payload":`...)
		var err error
		if b, err = appendPayload(b, *p); err != nil {
			return nil, err
		}
	}
	if r.Error != "" {
		b = append(b, `,"error":`...)
		b = appendString(b, r.Error)
	}
	return append(b, '}'), nil
}

func appendPayload(b []byte, p protocol.WorkerPayload) ([]byte, error) {
	b = append(b, `{"format":`...)
	b = appendString(b, string(p.Format))
	if p.Text != "" {
		b = append(b, `,"text":`...)
		b = appendString(b, p.Text)
	}
	if len(p.JSON) != 0 {
		b = append(b, `,"json":`...)
		// encoding/json compacts a RawMessage into its output; so does
		// this, and it refuses what is not one JSON value just the same.
		buf := bytes.NewBuffer(b)
		if err := json.Compact(buf, p.JSON); err != nil {
			return nil, fmt.Errorf("idempotency: encode record: payload json: %w", err)
		}
		b = buf.Bytes()
	}
	return append(b, '}'), nil
}

// appendTime writes t as time.Time's MarshalJSON does, refusing the same
// times (a year outside 0..9999).
func appendTime(b []byte, t time.Time) ([]byte, error) {
	b = append(b, '"')
	b, err := t.AppendText(b)
	if err != nil {
		return nil, fmt.Errorf("idempotency: encode record: %w", err)
	}
	return append(b, '"'), nil
}

const hexDigits = "0123456789abcdef"

// appendString writes s as a JSON string the way encoding/json does with
// HTML escaping off: quote, backslash and control bytes escaped, invalid
// UTF-8 replaced by U+FFFD, U+2028 and U+2029 escaped.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

func decodeRecord(b []byte, revision uint64) (Record, error) {
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return Record{}, fmt.Errorf("%w: revision %d: %v", ErrCorruptRecord, revision, err)
	}
	r.Revision = revision
	return r, nil
}
