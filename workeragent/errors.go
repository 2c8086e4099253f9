package workeragent

import "errors"

// Errors returned by the agent. Each is declared once here and wrapped with
// the offending value, so callers match them with errors.Is.
var (
	// ErrStreamLimitExceeded reports a chunk that would break the
	// invocation's stream limits. It is backpressure, not a failure: the
	// handler must stop streaming (or stop the call), never resend the
	// rejected chunk in a loop.
	ErrStreamLimitExceeded = errors.New("workeragent: stream limit exceeded")
	// ErrStreamNotAllowed reports a chunk for an invocation whose tool has
	// no stream policy, so the host would reject every chunk.
	ErrStreamNotAllowed = errors.New("workeragent: streaming not allowed for this call")
	// ErrCallFinished reports a chunk written after the handler returned.
	ErrCallFinished = errors.New("workeragent: call already finished")
	// ErrInvalidConfig reports a Config the agent cannot run with.
	ErrInvalidConfig = errors.New("workeragent: invalid config")
	// ErrInvalidTool reports a tool name that is not a legal tool name, or
	// a nil handler.
	ErrInvalidTool = errors.New("workeragent: invalid tool registration")
	// ErrDuplicateTool reports a second HandleTool for the same tool.
	ErrDuplicateTool = errors.New("workeragent: tool already registered")
	// ErrNotProvisioned reports Run with Config.BindOnly before the host
	// created the fabric's streams.
	ErrNotProvisioned = errors.New("workeragent: fabric not provisioned")
	// ErrNoTools reports Run on an agent with no registered tool.
	ErrNoTools = errors.New("workeragent: no tools registered")
	// ErrAlreadyStarted reports HandleTool after Run, or a second Run.
	ErrAlreadyStarted = errors.New("workeragent: agent already started")
	// ErrDrainIncomplete reports that some handlers had not returned when
	// the drain gave up waiting for them; their messages are redelivered
	// once the ack wait passes.
	ErrDrainIncomplete = errors.New("workeragent: drain incomplete")
	// ErrCancelRequested is the cause of a handler context cancelled
	// because the host asked to cancel the call.
	ErrCancelRequested = errors.New("workeragent: cancellation requested")
	// ErrDraining is the cause of a handler context cancelled because the
	// agent is shutting down; the call is handed back for redelivery.
	ErrDraining = errors.New("workeragent: agent draining")
	// ErrContractMismatch is the failure an invocation gets when the host
	// called the tool under a definition other than the agent's.
	ErrContractMismatch = errors.New("workeragent: tool definition mismatch")
	// ErrDeadlineElapsed is the cause of a handler context cancelled at
	// the call's deadline.
	ErrDeadlineElapsed = errors.New("workeragent: call deadline elapsed")
)

// errAnswerStored reports that an Idempotent call's answer subject held
// an answer already when this execution stored its own: a copy of the call
// answered first, and its answer is the key's.
var errAnswerStored = errors.New("workeragent: an answer is stored already")
