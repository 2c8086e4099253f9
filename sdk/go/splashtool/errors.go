package splashtool

import "errors"

// Errors of this package, declared once and wrapped with detail, so callers
// match them with errors.Is. Frames the host sends that do not authenticate
// or parse end ServeConn with the protocol package's sentinel instead
// (protocol.ErrBadTag, protocol.ErrSequence, ...).
var (
	// ErrCancelled is the cause of a handler context cancelled because the
	// host asked to cancel the call (only for a Cancellable tool). Read it
	// with context.Cause.
	ErrCancelled = errors.New("splashtool: call cancelled by the host")
	// ErrStreamClosed reports a chunk streamed after the call's terminal
	// frame, or after the session stopped writing.
	ErrStreamClosed = errors.New("splashtool: stream closed")
	// ErrUnexpectedMessage reports an authentic frame the host must not
	// send: a kind meant for the other direction, a second invoke for a
	// running request or a second cancel for one call. The session stops,
	// as for a forged frame: the two ends no longer agree.
	ErrUnexpectedMessage = errors.New("splashtool: unexpected message from the host")
	// ErrEnvironment reports a process started without the environment a
	// tool process gets from the worker (key descriptor, session id).
	ErrEnvironment = errors.New("splashtool: bad tool environment")
)
