package toolproc

import (
	"errors"
	"fmt"
)

// Errors of the package. Each is declared once and wrapped with detail, so
// callers match them with errors.Is.
var (
	// ErrInvalidConfig reports a Config a supervisor cannot run with.
	ErrInvalidConfig = errors.New("toolproc: invalid config")
	// ErrContainmentUnavailable reports a contained tool on a machine where
	// Bubblewrap is missing or cannot create its sandbox; the tool does not
	// run uncontained instead.
	ErrContainmentUnavailable = errors.New("toolproc: containment unavailable")
	// ErrStartFailed reports a process that could not be started.
	ErrStartFailed = errors.New("toolproc: process did not start")
	// ErrPoisoned reports a session the supervisor gave up on; the
	// PoisonError says why.
	ErrPoisoned = errors.New("toolproc: session poisoned")
	// ErrWatchdog reports a call whose deadline passed while it ran: the
	// watchdog stopped its process.
	ErrWatchdog = errors.New("toolproc: deadline passed; watchdog stopped the process")
	// ErrStopped reports a call held by a process the supervisor stopped
	// because it was closed.
	ErrStopped = errors.New("toolproc: supervisor stopped")
	// ErrCancelUnanswered reports a call of an MCP server that neither
	// answered nor ended within Config.CancelGrace of its cancellation:
	// the process was stopped, and the call's effect is indeterminate.
	ErrCancelUnanswered = errors.New("toolproc: cancellation left unanswered; process stopped")
	// ErrClosed reports a call made after Close.
	ErrClosed = errors.New("toolproc: supervisor closed")
)

// Reasons a session is poisoned, the label values of
// Observer.ProcessPoisoned.
const (
	ReasonGarbage        = "garbage"
	ReasonTooLong        = "too_long"
	ReasonBadTag         = "bad_tag"
	ReasonWrongSession   = "wrong_session"
	ReasonSequence       = "sequence"
	ReasonUnknownRequest = "unknown_request"
	ReasonContradictory  = "contradictory"
	ReasonInvalidMessage = "invalid_message"
	ReasonFlood          = "flood"
	ReasonExited         = "exited"
	ReasonWatchdog       = "watchdog"
	ReasonStopped        = "stopped"
	// ReasonCancelUnanswered: an MCP server left a cancelled call
	// unanswered past Config.CancelGrace.
	ReasonCancelUnanswered = "cancel_unanswered"
	// ReasonMCP: an MCP server broke the protocol (a failed handshake or
	// tool listing, a connection that failed while the process lived).
	ReasonMCP = "mcp_protocol"
)

// PoisonReasons lists every reason, for metrics that initialise their
// series.
var PoisonReasons = []string{
	ReasonGarbage, ReasonTooLong, ReasonBadTag, ReasonWrongSession, ReasonSequence,
	ReasonUnknownRequest, ReasonContradictory, ReasonInvalidMessage, ReasonFlood,
	ReasonExited, ReasonWatchdog, ReasonStopped, ReasonCancelUnanswered, ReasonMCP,
}

// PoisonError says why a session was poisoned; it wraps ErrPoisoned.
type PoisonError struct {
	Reason string // one of the Reason constants
	Detail string
}

func (e *PoisonError) Error() string {
	return fmt.Sprintf("toolproc: session poisoned (%s): %s", e.Reason, e.Detail)
}

// Is makes errors.Is(err, ErrPoisoned) hold.
func (e *PoisonError) Is(target error) bool { return target == ErrPoisoned }

func poison(reason, format string, v ...any) *PoisonError {
	return &PoisonError{Reason: reason, Detail: fmt.Sprintf(format, v...)}
}
