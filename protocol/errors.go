package protocol

import "errors"

// Every rejection in this package wraps exactly one of these sentinels, so a
// caller matches with errors.Is and reads the detail from the message. A
// rejected call never changes the state of the value it was called on.
var (
	// ErrInvalidKey reports key material that is not exactly AuthTagBytes
	// bytes, or a zero SessionKey that was never constructed.
	ErrInvalidKey = errors.New("protocol: invalid session key")
	// ErrInvalidSession reports an empty or malformed session id, or a frame
	// that belongs to another session.
	ErrInvalidSession = errors.New("protocol: invalid session")
	// ErrWrongRole reports a role that is not host or worker, or a frame
	// that was not sealed by the receiver's peer (a reflected frame).
	ErrWrongRole = errors.New("protocol: wrong role")
	// ErrBadTag reports a frame whose tag does not authenticate its
	// contents under the session key.
	ErrBadTag = errors.New("protocol: bad frame tag")
	// ErrSequence reports a replayed, skipped or reordered sequence number,
	// or an exhausted outbound sequence.
	ErrSequence = errors.New("protocol: out-of-order sequence")
	// ErrMalformedFrame reports a line or Frame that does not have the shape
	// of a frame: bad JSON, missing or unknown fields, a malformed tag.
	ErrMalformedFrame = errors.New("protocol: malformed frame")
	// ErrFrameTooLarge reports a line longer than the parser's limit.
	ErrFrameTooLarge = errors.New("protocol: frame too large")
	// ErrInvalidMessage reports a WorkerMessage (or a part of one) that
	// breaks a rule of Validate.
	ErrInvalidMessage = errors.New("protocol: invalid message")
	// ErrInvalidToolName reports a tool name that ValidateToolName refuses.
	ErrInvalidToolName = errors.New("protocol: invalid tool name")
)
