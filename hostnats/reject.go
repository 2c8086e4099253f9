package hostnats

import (
	"errors"
	"maps"
	"sync"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/protocol"
)

// Reasons a HostTransport drops a worker frame, as reported by Rejected and
// WithRejectHandler.
const (
	// RejectMalformed: not a frame, or larger than the limit.
	RejectMalformed = "malformed"
	// RejectBadTag: the tag does not verify under the key (forged, wrong
	// key, tampered).
	RejectBadTag = "bad_tag"
	// RejectWrongRole: a frame sealed by a host, reflected back.
	RejectWrongRole = "wrong_role"
	// RejectSession: the frame's session is not the request it carries.
	RejectSession = "session_mismatch"
	// RejectSequence: the sequence does not fit the attempt it carries.
	RejectSequence = "sequence"
	// RejectInvalid: an authentic frame whose message breaks a rule.
	RejectInvalid = "invalid_message"
	// RejectKind: a kind that does not belong where it came. HostTransport
	// no longer reports it, as chunks and terminal events share one
	// subject; observers still map the name.
	RejectKind = "unexpected_kind"
	// RejectReplayed: a sequence not greater than the last accepted for its
	// request, such as a redelivered chunk of a request already finished.
	RejectReplayed = "replayed"
	// RejectUnknownKey: sealed with a key the ring does not hold.
	RejectUnknownKey = "unknown_key"
	// RejectWrongSubject: an answer whose tool is not its subject's.
	RejectWrongSubject = "wrong_subject"
	// RejectWrongPool: an authentic answer for an operation of a tool
	// its pool does not serve (the loop's check, see hostloop.Event.Tool).
	RejectWrongPool = "wrong_pool"
)

// classify names the reason of a fabric.Codec error.
func classify(err error) string {
	switch {
	case errors.Is(err, fabric.ErrUnknownKey):
		return RejectUnknownKey
	case errors.Is(err, protocol.ErrBadTag), errors.Is(err, protocol.ErrInvalidKey):
		return RejectBadTag
	case errors.Is(err, protocol.ErrWrongRole):
		return RejectWrongRole
	case errors.Is(err, protocol.ErrInvalidSession):
		return RejectSession
	case errors.Is(err, protocol.ErrSequence):
		return RejectSequence
	case errors.Is(err, protocol.ErrInvalidMessage):
		return RejectInvalid
	}
	return RejectMalformed
}

// rejectCounter counts drops by reason; written by NATS callback
// goroutines, read by Rejected.
type rejectCounter struct {
	mu     sync.Mutex
	counts map[string]uint64
}

func (c *rejectCounter) add(reason string) {
	c.mu.Lock()
	if c.counts == nil {
		c.counts = make(map[string]uint64)
	}
	c.counts[reason]++
	c.mu.Unlock()
}

func (c *rejectCounter) snapshot() map[string]uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.counts)
}
