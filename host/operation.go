package host

import (
	"strconv"
	"time"
)

// ExternalToolID is the host's opaque handle for one operation. It never
// leaves the host: workers see the idempotency key instead.
type ExternalToolID uint64

// String returns "op-<n>".
func (id ExternalToolID) String() string { return "op-" + strconv.FormatUint(uint64(id), 10) }

// OperationState is where an operation is in its lifecycle.
type OperationState uint8

// Operation states. Valid transitions (every other one is refused with a
// *StateError and changes nothing):
//
//	Queued                -> Claimed                ClaimNextExternalTool
//	Queued                -> Cancelled              CancelExternalTool, or the promise dropped before claim
//	Queued                -> TimedOut               deadline (expiry, claim of an expired op, Pump)
//	Queued                -> Succeeded | Failed     Pump ran a local handler
//	Claimed(n)            -> Claimed(n+1)           RetryExternalTool, while n < MaxAttempts and before the deadline
//	Claimed               -> CancellationRequested  RequestExternalToolCancellation
//	Claimed               -> Succeeded | Failed     CompleteExternalTool, reconciliation
//	Claimed               -> TimedOut               expiry, or a result after the deadline
//	Claimed               -> Cancelled              CancelExternalTool, reconciliation reporting cancelled
//	CancellationRequested -> CancellationRequested  a repeated request (idempotent, no change)
//	CancellationRequested -> Succeeded | Failed     a result wins the race
//	CancellationRequested -> TimedOut               expiry, or a result after the deadline
//	CancellationRequested -> Cancelled              ConfirmExternalToolCancellation, CancelExternalTool
//	Succeeded, Failed, TimedOut, Cancelled          terminal
const (
	stateNone OperationState = iota
	Queued
	Claimed
	CancellationRequested
	Succeeded
	Failed
	TimedOut
	Cancelled
	numStates
)

var stateNames = [numStates]string{"finished", "queued", "claimed", "cancellation_requested", "succeeded", "failed", "timed_out", "cancelled"}

// String returns the state's snake_case name.
func (s OperationState) String() string {
	if s < numStates {
		return stateNames[s]
	}
	return "state(" + strconv.Itoa(int(s)) + ")"
}

// Terminal reports whether no further transition is possible.
func (s OperationState) Terminal() bool { return s >= Succeeded || s == stateNone }

func bit(s OperationState) uint16 { return 1 << s }

// transitions is the table above as bit sets; move consults it so that a
// code path that forgets a state check fails loudly in tests instead of
// corrupting an operation.
var transitions = [numStates]uint16{
	Queued:                bit(Claimed) | bit(Cancelled) | bit(TimedOut) | bit(Succeeded) | bit(Failed),
	Claimed:               bit(Claimed) | bit(CancellationRequested) | bit(Succeeded) | bit(Failed) | bit(TimedOut) | bit(Cancelled),
	CancellationRequested: bit(Succeeded) | bit(Failed) | bit(TimedOut) | bit(Cancelled),
}

// action names a method that acts on one operation.
type action uint8

const (
	actComplete action = iota
	actRetry
	actRequestCancel
	actConfirmCancel
	actCancel
	actChunk
	actReconcile
	numActions
)

var actionNames = [numActions]string{"complete", "retry", "request cancellation", "confirm cancellation", "cancel", "push chunk", "reconcile"}

// refusals says, for each action and live state, why the action is
// refused there (nil: allowed). Every action is refused in a terminal
// state with ErrWrongState.
var refusals = [numActions][CancellationRequested + 1]error{
	actComplete:      {Queued: ErrNotClaimed},
	actRetry:         {Queued: ErrNotClaimed, CancellationRequested: ErrCancellationRequested},
	actRequestCancel: {Queued: ErrNotClaimed},
	actConfirmCancel: {Queued: ErrCancellationNotRequested, Claimed: ErrCancellationNotRequested},
	actCancel:        {},
	actChunk:         {Queued: ErrNotClaimed, CancellationRequested: ErrCancellationRequested},
	actReconcile:     {Queued: ErrNotClaimed},
}

func refusal(a action, s OperationState) error {
	if s.Terminal() {
		return ErrWrongState
	}
	return refusals[a][s]
}

// operation is one pending tool call. Finished operations leave the live
// map and keep only a terminalRecord.
type operation struct {
	id        ExternalToolID
	tool      *tool
	input     string
	key       string // idempotency key; empty for local tools
	callIndex uint64
	deadline  time.Time
	promise   *Promise
	// prev/next link the op into its tool kind's FIFO while it waits to
	// be claimed or pumped; queued reports membership.
	prev, next *operation
	heapIndex  int // index in the deadline heap, -1 when absent
	attempt    uint32
	state      OperationState
	queued     bool
	// stream counters, spanning all attempts.
	chunks, sourceBytes, releasedBytes int
}

func (op *operation) hasDeadline() bool { return !op.deadline.IsZero() }

func (op *operation) expired(now time.Time) bool {
	return op.hasDeadline() && !now.Before(op.deadline)
}

// move applies one transition of the table.
func (op *operation) move(to OperationState) {
	if transitions[op.state]&bit(to) == 0 {
		panic("host: invalid transition " + op.state.String() + " -> " + to.String())
	}
	op.state = to
}

// OperationInfo describes an operation for hosts and tests.
type OperationInfo struct {
	ID             ExternalToolID
	Tool           string
	External       bool
	Format         Format
	State          OperationState
	CallIndex      uint64
	Attempt        uint32
	AttemptLimit   uint32
	IdempotencyKey string
	Deadline       time.Time // zero when the tool has no deadline
	PromiseDropped bool
	Chunks         int
	SourceBytes    int
	ReleasedBytes  int
}

func (op *operation) info() OperationInfo {
	return OperationInfo{
		ID: op.id, Tool: op.tool.policy.Name, External: op.tool.external, Format: op.tool.format,
		State: op.state, CallIndex: op.callIndex, Attempt: op.attempt,
		AttemptLimit: uint32(op.tool.policy.MaxAttempts), IdempotencyKey: op.key, Deadline: op.deadline,
		PromiseDropped: op.promise != nil && op.promise.dropped,
		Chunks:         op.chunks, SourceBytes: op.sourceBytes, ReleasedBytes: op.releasedBytes,
	}
}

// terminalRecord is what remains of a finished operation.
type terminalRecord struct {
	tool      *tool
	callIndex uint64
	attempt   uint32
	state     OperationState
}
