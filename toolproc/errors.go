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
)

// PoisonReasons lists every reason, for metrics that initialise their
// series.
var PoisonReasons = []string{
	ReasonGarbage, ReasonTooLong, ReasonBadTag, ReasonWrongSession, ReasonSequence,
	ReasonUnknownRequest, ReasonContradictory, ReasonInvalidMessage, ReasonFlood,
	ReasonExited, ReasonWatchdog, ReasonStopped,
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
