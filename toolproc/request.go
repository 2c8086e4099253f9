package toolproc

import (
	"time"

	"github.com/splashfabric/splashfabric/protocol"
)

// Request is one call handed to a Supervisor.
type Request struct {
	// Invoke is the invocation; its RequestID is replaced by the id of the
	// call within the process session.
	Invoke protocol.Invoke
	// Deadline is armed as the watchdog before the invocation is written;
	// zero means none.
	Deadline time.Time
	// Chunk releases a chunk of progress text; an error refuses it (the
	// stream bounds), and a call whose refused chunks pass
	// Config.FloodSlack poisons its session. Called from the session's
	// reader goroutine, in order. Nil refuses every chunk.
	Chunk func(text string) error
	// Cancel, when closed, sends the call's one cancellation request to
	// the process and arms Config.CancelGrace: the call must end within
	// it (by its result or an acknowledgement), or it is stopped with its
	// process (Lost, Stopped, ErrCancelUnanswered). Nil never cancels.
	Cancel <-chan struct{}
	// Uncancellable marks a call of a tool that honours no cancellation:
	// a closed Cancel sends it nothing and only arms the grace.
	Uncancellable bool
	// ServerTool is, for an MCP server, the server's name of the tool to
	// call; empty means Invoke.Tool.
	ServerTool string
	// Disposition, if set, is told of the tool's answer to the
	// cancellation request: unsupported while the call runs on,
	// acknowledged or too_late as it ends.
	Disposition func(protocol.CancelDisposition)
}

// OutcomeKind says how a call ended.
type OutcomeKind int

// How a call ends.
const (
	// Answered: the tool sent a result; Outcome.Result holds it.
	Answered OutcomeKind = iota + 1
	// CancelAcknowledged: the tool acknowledged the cancellation request;
	// its effect has stopped and no result follows.
	CancelAcknowledged
	// Lost: the process was lost while it held the call; Outcome.Err says
	// why, Watchdog and Stopped say whether the supervisor stopped it.
	Lost
	// NotStarted: the invocation was never written to a process (the
	// context ended while the call waited for one, or none could start).
	NotStarted
)

func (k OutcomeKind) String() string {
	switch k {
	case Answered:
		return "answered"
	case CancelAcknowledged:
		return "cancel_acknowledged"
	case Lost:
		return "lost"
	case NotStarted:
		return "not_started"
	}
	return "unknown"
}

// Outcome is how a call ended.
type Outcome struct {
	Kind OutcomeKind
	// Result is the tool's terminal answer, for Answered; its RequestID is
	// the process session's call id.
	Result protocol.Result
	// Err says why a call was Lost or NotStarted.
	Err error
	// Watchdog: this call's own deadline (or the maximum runtime of a
	// call without one) passed while it ran, and the watchdog stopped the
	// process.
	Watchdog bool
	// Stopped: the process was stopped because the supervisor was
	// closed, or because this call did not end within the cancel grace.
	Stopped bool
}
