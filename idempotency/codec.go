package idempotency

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Both journals store a record as its JSON encoding, so the memory journal
// round-trips exactly what the KV journal does (times lose their monotonic
// reading, results are deep copies). HTML escaping is off: payload text is
// stored as written, since escaping would only inflate it against the
// message size limit.

func encodeRecord(r Record) ([]byte, error) {
	var b bytes.Buffer
	b.Grow(recordSizeHint(r))
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return nil, fmt.Errorf("idempotency: encode record: %w", err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte{'\n'}), nil
}

// recordSizeHint sizes the buffer so that one allocation usually suffices.
func recordSizeHint(r Record) int {
	n := 256 + len(r.Key) + len(r.Owner) + len(r.PreviousOwner)
	if r.Result != nil {
		n += r.Result.Size() + r.Result.Size()/8
	}
	return n
}

func decodeRecord(b []byte, revision uint64) (Record, error) {
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return Record{}, fmt.Errorf("%w: revision %d: %v", ErrCorruptRecord, revision, err)
	}
	r.Revision = revision
	return r, nil
}
