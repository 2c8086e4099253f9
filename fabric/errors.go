package fabric

import (
	"errors"

	"github.com/nats-io/nats.go/jetstream"
)

// Every rejection in this package wraps one of these sentinels (and, for a
// frame that fails authentication, also the protocol sentinel that says
// why), so callers match with errors.Is. A rejected call changes nothing.
var (
	// ErrInvalidConfig reports a Config field outside its documented range.
	ErrInvalidConfig = errors.New("fabric: invalid config")
	// ErrInvalidHostID reports a host id that is not one subject token of
	// [A-Za-z0-9_-].
	ErrInvalidHostID = errors.New("fabric: invalid host id")
	// ErrInvalidAttempt reports an attempt or frame counter of zero, or one
	// too large for the sequence scheme.
	ErrInvalidAttempt = errors.New("fabric: invalid attempt")
	// ErrForged reports a frame that must not be acted on: malformed, a bad
	// tag, the wrong sender role, a session or sequence that does not match
	// the message it carries, or a kind that does not belong on the subject.
	// It always comes together with the protocol sentinel that says which.
	ErrForged = errors.New("fabric: rejected frame")
	// ErrUnknownKey reports a frame sealed with a key the receiver's ring
	// does not hold: dropped too early, or promoted somewhere before this
	// receiver was given it (see protocol.KeyRing.Stage). It comes with
	// ErrForged and protocol.ErrBadTag.
	ErrUnknownKey = errors.New("fabric: frame sealed with a key not in the ring")
	// ErrNoDirectGet reports a stream that does not serve direct gets
	// where the fabric reads by subject (StreamEvents provisioned by an
	// older host).
	ErrNoDirectGet = errors.New("fabric: stream does not allow direct get")
)

// WrongLastSequence reports JetStream's refusal of a publish whose
// expected last (subject) sequence did not hold: the fence every
// compare-and-set write of the fabric relies on. A replicated stream
// reports it under a code of its own, so both codes count.
func WrongLastSequence(err error) bool {
	if err == nil {
		// Most calls are a successful publish's; errors.As would
		// allocate its target for every one of them.
		return false
	}
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) &&
		(apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
			apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}
