package protocol

import (
	"fmt"

	segjson "github.com/segmentio/encoding/json"
)

// encodeMessage is the only way Seal turns a WorkerMessage into the bytes a
// tag covers. It writes a compact object with no newline, which both wire
// layouts carry verbatim, byte for byte what encoding/json writes, in about
// half the time (decodeStrict says why the frames use this codec).
func encodeMessage(m *WorkerMessage) ([]byte, error) {
	return segjson.Marshal(m)
}

// decodeMessage is the only way an authenticated message body becomes a
// WorkerMessage: strict decoding, then Validate. Strict decoding refuses
// unknown fields, so a peer on a newer contract (say, one that adds
// Invoke.Contract) is refused rather than half understood.
func decodeMessage(raw []byte) (WorkerMessage, error) {
	var m WorkerMessage
	if err := decodeStrict(raw, &m); err != nil {
		return WorkerMessage{}, fmt.Errorf("%w: %v", ErrInvalidMessage, err)
	}
	if err := m.Validate(); err != nil {
		return WorkerMessage{}, err
	}
	return m, nil
}
