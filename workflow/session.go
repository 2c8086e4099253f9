package workflow

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/splashfabric/splashfabric/host"
)

// Session is the core of one script session: its runtime and, for a
// durable session, its ledger and how much of the ledger a Log holds. It is
// a value with no goroutines and no I/O, in the shape of etcd raft's
// RawNode: inputs go in through its methods, and what the world must do
// about them (entries to append, invocations to publish, cancels to send,
// answers to acknowledge, a ledger to remove) comes out of Ready as data.
// Its driver (the host loop) does those things and reports back what the
// Log answered: Stored, WriteFailed or Conflict.
//
// The rule it keeps for every session: nothing leaves the host before the
// entry that explains it is stored. A publish waits for its prepared (or
// retry) entry, a cancel for its cancel_requested entry, the
// acknowledgement of a worker's answer for the entry that records what the
// answer changed. A session without a ledger is the same type with no
// ledger, whose effects are released at once, so its driver never calls a
// runtime input method itself.
//
// Every input reaches the runtime through one function (apply), which a
// live session calls before recording the input and a restored session
// calls for each entry read back from its Log: recording and replaying are
// one mapping, and cannot drift apart.
//
// A Session is not safe for concurrent use.
type Session struct {
	rt    *host.Runtime
	clock host.Clock
	// led is nil for a session that ends with its process.
	led *Ledger
	// newRequest names each operation claimed from now on.
	newRequest func() string

	// persisted is how many of led's entries the Log holds; writing is
	// the entry count an Append handed out will store (0: none out).
	persisted int
	writing   int
	// retrying: the last Append failed and waits for RetryWrite.
	retrying bool
	// unsure: an Append failed in a way that leaves unknown whether it
	// was stored, so the ledger may exist with nothing persisted; an
	// ending session must then remove it.
	unsure bool
	// removing: the ledger's removal was handed out; removed: its
	// driver reported it done.
	removing, removed bool
	// appends counts the writes stored since the ledger was last
	// rewritten whole; rewriting: the write out is such a rewrite.
	appends   int
	rewriting bool

	// ops are the operations claimed and not settled, by id.
	ops map[host.ExternalToolID]*Op
	// outbox holds effects waiting for their entry to be stored.
	outbox []effect
	// settled holds operations that left ops since the last Ready.
	settled []*Op

	// result is the script's latest step; nil before Eval ran.
	result *host.EvalResult
	// ending is why the session is being ended before its script did,
	// "" while it is not.
	ending EndReason
	// ended: End was called; nothing more is recorded.
	ended bool
	// accepted: Ready reported the submission may be answered.
	accepted bool
	// relinquished: another owner wrote the ledger (Conflict).
	relinquished bool
	// notified: Ready reported the relinquishment.
	notified bool
}

// Op is one external operation a session claimed. Its fields are the
// session's; its driver reads them.
type Op struct {
	ID host.ExternalToolID
	// RequestID is the operation's id on the wire, stable across its
	// attempts and across restarts.
	RequestID string
	// Inv is its latest attempt.
	Inv host.ExternalInvocation
	// AttemptAt is when its latest attempt was made (claimed, or
	// retried): no later than that attempt's dispatch.
	AttemptAt time.Time
	// Final is its terminal state once it settled.
	Final host.OperationState

	// sent: its latest attempt was handed out to publish. Until then no
	// worker holds it: held for its prepared entry, or between attempts.
	sent bool
	// prep is the index of its prepared entry.
	prep int
	// streamDirty: it streamed since its counts were last recorded.
	streamDirty bool
}

// Sent reports whether the operation's latest attempt was handed out to
// publish, so a worker may hold it.
func (o *Op) Sent() bool { return o.sent }

// Config builds a live Session.
type Config struct {
	// Runtime is the session's runtime, its script evaluated once
	// (First is what that step gave).
	Runtime *host.Runtime
	First   *host.EvalResult
	// Clock is the runtime's clock: entries are stamped with it.
	Clock host.Clock
	// Ledger, when set, makes the session durable: it holds the
	// submission (NewLedger) and nothing of it is stored yet.
	Ledger *Ledger
	// RequestID names each claimed operation; required.
	RequestID func() string
}

// NewSession starts the core of a session whose first step ran.
func NewSession(cfg Config) *Session {
	s := &Session{
		rt:         cfg.Runtime,
		clock:      cfg.Clock,
		led:        cfg.Ledger,
		newRequest: cfg.RequestID,
		ops:        make(map[host.ExternalToolID]*Op),
		result:     cfg.First,
	}
	if s.clock == nil {
		s.clock = host.NewManualClock(time.Time{})
	}
	return s
}

// Durable reports whether the session keeps a ledger.
func (s *Session) Durable() bool { return s.led != nil }

// Ledger is the session's ledger, nil without one. The caller must not
// change it.
func (s *Session) Ledger() *Ledger { return s.led }

// Owner is the tenant the session's script runs for: its submission's, on
// the first run and on every replay.
func (s *Session) Owner() string { return s.rt.Owner() }

// Persisted is how many ledger entries the Log holds.
func (s *Session) Persisted() int { return s.persisted }

// MayExist reports whether the Log may hold this session's ledger: some
// of it is stored, or a write of it may have been.
func (s *Session) MayExist() bool { return s.led != nil && (s.persisted > 0 || s.unsure) }

// Result is the session's outcome so far: the script's latest step, or,
// once an ending session has no live operation, why it was ended.
func (s *Session) Result() *host.EvalResult { return s.result }

// Done reports whether the session's outcome is final.
func (s *Session) Done() bool { return s.result != nil && !s.result.Suspended }

// Ending is why the session is being ended, "" when it is not.
func (s *Session) Ending() EndReason { return s.ending }

// Op returns the live operation id, nil if the session holds none.
func (s *Session) Op(id host.ExternalToolID) *Op { return s.ops[id] }

// Ops returns the live operations in id order.
func (s *Session) Ops() []*Op {
	out := make([]*Op, 0, len(s.ops))
	for _, op := range s.ops {
		out = append(out, op)
	}
	slices.SortFunc(out, func(a, b *Op) int { return int(a.ID - b.ID) })
	return out
}

// Len is how many operations are live.
func (s *Session) Len() int { return len(s.ops) }

// Operation reports what the runtime holds of id.
func (s *Session) Operation(id host.ExternalToolID) (host.OperationInfo, bool) {
	return s.rt.Operation(id)
}

// NextDeadline is the runtime's earliest operation deadline.
func (s *Session) NextDeadline() (time.Time, bool) { return s.rt.NextDeadline() }

// RemainingDeadline is what is left of id's deadline now.
func (s *Session) RemainingDeadline(id host.ExternalToolID) (time.Duration, bool) {
	return s.rt.RemainingDeadline(id)
}

// DrainAuditTo appends the runtime's audit events since the last drain.
func (s *Session) DrainAuditTo(dst []host.AuditEvent) []host.AuditEvent {
	return s.rt.DrainAuditTo(dst)
}

// ReleaseScript lets the runtime drop its script engine once nothing more
// will run in it.
func (s *Session) ReleaseScript() bool { return s.rt.ReleaseScript() }

// HoldsScript reports whether the runtime still holds its script engine.
func (s *Session) HoldsScript() bool { return s.rt.HoldsScript() }

// LocalPending reports whether host-pumped (local) calls wait to run.
func (s *Session) LocalPending() bool { return s.rt.LocalPending() }

// RecordLateResult writes an answer for an operation that already settled
// to the runtime's audit; the outcome stands.
func (s *Session) RecordLateResult(id host.ExternalToolID, attempt uint32, status string, bytes int) error {
	return s.rt.RecordLateResult(id, attempt, status, bytes)
}

// keep sets the script's latest step, when the input resumed it.
func (s *Session) keep(r *host.EvalResult) {
	if r != nil && s.ending == "" {
		s.result = r
	}
}

// forget moves op out of the live operations, as settled.
func (s *Session) forget(op *Op) {
	if s.ops[op.ID] != op {
		return
	}
	if info, ok := s.rt.Operation(op.ID); ok {
		op.Final = info.State
	}
	delete(s.ops, op.ID)
	s.settled = append(s.settled, op)
}

// settleIfTerminal forgets op once the runtime holds it no more, or holds
// it terminal.
func (s *Session) settleIfTerminal(op *Op) {
	if info, ok := s.rt.Operation(op.ID); !ok || info.State.Terminal() {
		s.forget(op)
	}
}

// now is the time the runtime sees.
func (s *Session) now() time.Time { return s.clock.Now() }

// String names the session's state for test output.
func (s *Session) String() string {
	state := "suspended"
	switch r := s.result; {
	case r == nil:
	case errors.Is(r.Err, ErrSessionCancelled):
		state = "cancelled: " + r.Err.Error()
	case r.Err != nil:
		state = "failed: " + r.Err.Error()
	case !r.Suspended:
		state = "completed: " + r.Value
	}
	if s.led == nil {
		return state
	}
	return fmt.Sprintf("%s; ledger %d stored of %d", state, s.persisted, s.led.Len())
}
