package idempotency

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Both journals store a record as its JSON encoding, so the memory journal
// round-trips exactly what the KV journal does (times lose their monotonic
// reading, results are deep copies).

func encodeRecord(r Record) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	// Payload text is stored as written; HTML escaping would only inflate
	// it by up to six times against the message size limit.
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return nil, fmt.Errorf("idempotency: encode record: %w", err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

func decodeRecord(b []byte, revision uint64) (Record, error) {
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return Record{}, fmt.Errorf("%w: revision %d: %v", ErrCorruptRecord, revision, err)
	}
	r.Revision = revision
	return r, nil
}
