package protocol

import (
	"fmt"

	"github.com/splashfabric/splashfabric/internal/clip"
)

// WorkerBinding returns the request and (where the message carries one)
// the attempt a worker event names; zero attempt means "not stated". A
// transport checks a worker frame's session and sequence against them. A
// message of any other kind than a chunk, result or cancel disposition is
// ErrInvalidMessage.
func (m WorkerMessage) WorkerBinding() (requestID string, attempt uint32, err error) {
	switch {
	case m.Kind == KindChunk && m.Chunk != nil:
		return m.Chunk.RequestID, 0, nil
	case m.Kind == KindResult && m.Result != nil:
		return m.Result.RequestID, m.Result.Attempt, nil
	case m.Kind == KindCancelDisposition && m.CancelDisp != nil:
		return m.CancelDisp.RequestID, m.CancelDisp.Attempt, nil
	}
	return "", 0, fmt.Errorf("%w: kind %q is not a worker event", ErrInvalidMessage, clip.String(string(m.Kind), clip.Echo))
}

// IsTerminal reports whether m ends its attempt at the host: a result, or
// a cancel acknowledgement. A transport that keeps a replay window per
// request forgets it only after one.
func (m WorkerMessage) IsTerminal() bool {
	switch m.Kind {
	case KindResult:
		return true
	case KindCancelDisposition:
		return m.CancelDisp != nil && m.CancelDisp.Disposition == CancelAcknowledged
	}
	return false
}
