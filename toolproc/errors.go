package toolproc

import (
	"errors"
	"fmt"
	"slices"
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
	// ErrCancelUnanswered reports a cancelled call that did not end
	// within Config.CancelGrace of its cancellation (its tool answered
	// unsupported, or nothing): the process was stopped, and the call's
	// effect is indeterminate.
	ErrCancelUnanswered = errors.New("toolproc: cancelled call did not end; process stopped")
	// ErrLimit matches a PoisonError whose reason is a sandbox limit
	// (memory_limit, cpu_limit, pids_limit, file_size_limit, tmp_full).
	ErrLimit = errors.New("toolproc: sandbox limit reached")
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
	// ReasonCancelUnanswered: a cancelled call got no answer to its
	// cancellation and did not end within Config.CancelGrace.
	ReasonCancelUnanswered = "cancel_unanswered"
	// ReasonCancelUnsupported: the tool answered a cancellation
	// unsupported (or does not honour cancellation at all) and the call
	// did not end within Config.CancelGrace.
	ReasonCancelUnsupported = "cancel_unsupported"
	// ReasonMaxRuntime: a call without a deadline ran past
	// Config.MaxRuntime.
	ReasonMaxRuntime = "max_runtime"
	// The sandbox's limits (Config.Contain.Limits).
	ReasonMemoryLimit   = "memory_limit"
	ReasonCPULimit      = "cpu_limit"
	ReasonPidsLimit     = "pids_limit"
	ReasonFileSizeLimit = "file_size_limit"
	ReasonTmpFull       = "tmp_full"
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
	ReasonCancelUnsupported, ReasonMaxRuntime,
	ReasonMemoryLimit, ReasonCPULimit, ReasonPidsLimit, ReasonFileSizeLimit, ReasonTmpFull,
}

// limitReasons are the reasons ErrLimit matches.
var limitReasons = []string{ReasonMemoryLimit, ReasonCPULimit, ReasonPidsLimit, ReasonFileSizeLimit, ReasonTmpFull}

// PoisonError says why a session was poisoned; it wraps ErrPoisoned, and
// ErrLimit for a limit's reason. Nothing in it comes from what the tool
// wrote: a bad line is described by its number and size, never its
// bytes, because the error travels to the audit and to the script.
type PoisonError struct {
	Reason string // one of the Reason constants
	Detail string
	// Line and Bytes locate the line of stdout that poisoned the
	// session, for a reason about a frame; 0 otherwise.
	Line  int
	Bytes int
}

func (e *PoisonError) Error() string {
	return fmt.Sprintf("toolproc: session poisoned (%s): %s", e.Reason, e.Detail)
}

// Is makes errors.Is(err, ErrPoisoned) hold, and errors.Is(err, ErrLimit)
// for a limit.
func (e *PoisonError) Is(target error) bool {
	return target == ErrPoisoned || target == ErrLimit && slices.Contains(limitReasons, e.Reason)
}

func poison(reason, format string, v ...any) *PoisonError {
	return &PoisonError{Reason: reason, Detail: fmt.Sprintf(format, v...)}
}
