package host

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error a Runtime returns wraps one of these, so
// callers match with errors.Is rather than by message.
var (
	// ErrUnknownTool: no tool is registered under the name.
	ErrUnknownTool = errors.New("host: unknown tool")
	// ErrDuplicateTool: a tool is already registered under the name.
	ErrDuplicateTool = errors.New("host: duplicate tool")
	// ErrInvalidToolName: the name is not a legal tool name (see
	// protocol.ValidateToolName); tool names become NATS subject tokens.
	ErrInvalidToolName = errors.New("host: invalid tool name")
	// ErrNotExternal: the tool or operation is host-pumped, not external.
	ErrNotExternal = errors.New("host: not an external tool")
	// ErrExternalToolNotCallable: Call/CallJSON named an external tool,
	// which can only be started. Returned before any budget is consumed.
	ErrExternalToolNotCallable = errors.New("host: external tool cannot be called synchronously")
	// ErrBudgetExhausted: the session's tool-call budget is spent.
	ErrBudgetExhausted = errors.New("host: tool call budget exhausted")
	// ErrPendingLimit: the pending-promise limit is reached.
	ErrPendingLimit = errors.New("host: pending operation limit reached")
	// ErrUnknownOperation: no operation has this id.
	ErrUnknownOperation = errors.New("host: unknown operation")
	// ErrWrongState: the operation is in a state where the method does not
	// apply. Errors carrying it are *StateError values.
	ErrWrongState = errors.New("host: operation in wrong state")
	// ErrNotClaimed: the operation has not been claimed yet.
	ErrNotClaimed = errors.New("host: operation not claimed")
	// ErrRetryLimitReached: the operation used all its attempts; the host
	// must complete or cancel it.
	ErrRetryLimitReached = errors.New("host: retry limit reached")
	// ErrDeadlineElapsed: the operation's deadline passed; resolve it with
	// ExpireTimedOutTools.
	ErrDeadlineElapsed = errors.New("host: deadline elapsed")
	// ErrStreamLimitExceeded: a chunk would exceed a stream bound. It is
	// backpressure: the adapter must stop forwarding, not retry the chunk.
	ErrStreamLimitExceeded = errors.New("host: stream limit exceeded")
	// ErrStreamNotEnabled: the tool has no stream policy.
	ErrStreamNotEnabled = errors.New("host: streaming not enabled for tool")
	// ErrRedactorTooLate: the tool was already started once; its redactor
	// can no longer change.
	ErrRedactorTooLate = errors.New("host: stream redactor set after first start")
	// ErrCancellationRequested: cancellation is pending for the operation,
	// which refuses retries and chunks.
	ErrCancellationRequested = errors.New("host: cancellation requested")
	// ErrCancellationNotRequested: confirmation without a prior request.
	ErrCancellationNotRequested = errors.New("host: cancellation not requested")
	// ErrEntropyUnavailable: the session nonce could not be drawn, so no
	// external tool can be registered (there is no time or PID fallback).
	ErrEntropyUnavailable = errors.New("host: session nonce entropy unavailable")
	// ErrInvalidInput: a tool input, policy or argument is malformed.
	ErrInvalidInput = errors.New("host: invalid input")
	// ErrInvalidOutput: a tool result failed the output checks. It
	// reaches callers inside a *ToolError of kind ToolInvalidOutput.
	ErrInvalidOutput = errors.New("host: invalid output")
	// ErrReconcileMismatch: a reconciliation response was not
	// authenticated or does not answer the request for this operation.
	ErrReconcileMismatch = errors.New("host: reconciliation mismatch")
	// ErrScriptRunning: a script is already suspended in this runtime.
	ErrScriptRunning = errors.New("host: script already running")
	// ErrNoScript: the method needs a script and none was evaluated.
	ErrNoScript = errors.New("host: no script")
	// ErrCapabilityDenied: the script used a capability it was not granted.
	ErrCapabilityDenied = errors.New("host: capability denied")
	// ErrToolNotGranted: the script called or started a tool outside its
	// session's tool patterns (Config.Tools). It is refused before any
	// budget is consumed, and also matches ErrCapabilityDenied.
	ErrToolNotGranted = errors.New("host: tool not granted")
	// ErrInvalidToolPattern: a tool pattern that is not dot-separated
	// name tokens, "*" or a final ">".
	ErrInvalidToolPattern = errors.New("host: invalid tool pattern")
	// ErrExecutionBudget: a script slice ran past its execution budget.
	ErrExecutionBudget = errors.New("host: execution budget exceeded")
	// ErrMemoryBudget: a script held more memory than its session's
	// budget, or asked a builtin for a string, array or argument list
	// larger than the budget allows.
	ErrMemoryBudget = errors.New("host: memory budget exceeded")
	// ErrInputTooLarge: a tool input longer than its way to a worker can
	// carry (Config.MaxInputBytes). It is refused at the start, before
	// any budget is consumed.
	ErrInputTooLarge = errors.New("host: tool input too large")
	// ErrNondeterministic: a replayed script made a call its ledger does
	// not have at that call index (another tool or input), so its recorded
	// answers no longer belong to it.
	ErrNondeterministic = errors.New("host: nondeterministic replay")
)

// StateError reports a method called on an operation in a state where it
// does not apply. It matches ErrWrongState and its specific reason
// (ErrNotClaimed, ErrCancellationRequested, ...) with errors.Is.
type StateError struct {
	ID     ExternalToolID
	Tool   string
	State  OperationState
	Action string
	Err    error
}

// Error describes the refused action.
func (e *StateError) Error() string {
	return fmt.Sprintf("%v: %s (%q) is %s: cannot %s", e.Err, e.ID, e.Tool, e.State, e.Action)
}

// Unwrap returns the reason and ErrWrongState.
func (e *StateError) Unwrap() []error {
	if e.Err == ErrWrongState {
		return []error{ErrWrongState}
	}
	return []error{e.Err, ErrWrongState}
}

// Errors of the session archive (see SessionArchive).
