package workflow

import (
	"math"
	"slices"

	"github.com/splashfabric/splashfabric/host"
)

// Ready is what a session's driver must do after a step, in this order of
// concern: store Append, then publish, cancel and acknowledge what it
// lists. Everything it lists is explained by entries already stored, so a
// host that dies after doing any part of it leaves a ledger that accounts
// for it.
type Ready struct {
	// Append is the next write of the ledger, nil when none is due (none
	// is unstored, or one is in flight). The driver reports its answer
	// with Stored, WriteFailed or Conflict.
	Append *Append
	// Publish lists operations whose current attempt (Op.Inv) is to be
	// published, in claim order.
	Publish []*Op
	// Cancel lists operations whose worker is to be asked to stop.
	Cancel []CancelOut
	// Acks are the transport acknowledgements of worker answers whose
	// entries are stored.
	Acks []func()
	// Settled lists operations that left the session's live set since
	// the last Ready (terminal, or dropped unpublished as it ended).
	Settled []*Op
	// Accepted is set once, when the submission may be answered: the
	// ledger's first write is stored, the session keeps no ledger, or it
	// ended without needing one. A Ready that sets it holds nothing else
	// but Settled: the driver answers (or withdraws) the submission
	// before anything of the session leaves the host.
	Accepted bool
	// Remove is set once an ended session's ledger may exist and no write
	// of it is in flight: the driver removes it, after storing the
	// session's outcome elsewhere (so a later process finds one or the
	// other), and then runs Remove.Acks.
	Remove *Removal
	// Relinquish is set once another owner wrote the ledger (Conflict):
	// the session is that owner's now, and the driver drops it.
	Relinquish bool
}

// Append is one ledger write: Entries go at index From of the session's
// ledger, fenced on the ledger holding exactly From entries.
type Append struct {
	From    int
	Entries []Entry
	// All, when set, is the whole ledger (Entries are its tail): a
	// driver whose Log is a Rewriter stores it in place of the stored
	// ledger, so a ledger appended to many times is read back in one
	// message. Set once the appends since the last rewrite outnumber
	// max(CompactAfter, a quarter of the ledger), which keeps the cost
	// of rewriting linear in the ledger's length.
	All []Entry
}

// CompactAfter is the fewest appends after which a session's next write
// rewrites its whole ledger (Append.All).
const CompactAfter = 32

// UpTo is the entry count the write leaves stored.
func (a *Append) UpTo() int { return a.From + len(a.Entries) }

// CancelOut is a cancellation to send to the worker holding Op.
type CancelOut struct {
	Op      *Op
	Request host.ExternalToolCancellationRequest
}

// Removal is an ended session's ledger to remove.
type Removal struct {
	// Acks are answers whose entries were never stored: they are
	// acknowledged once the outcome is stored elsewhere.
	Acks []func()
}

type effectKind uint8

const (
	effPublish effectKind = iota + 1
	effCancel
	effAck
)

// effect is something that may leave the host once the ledger holds upTo
// entries.
type effect struct {
	upTo    int
	kind    effectKind
	op      *Op
	attempt uint32
	ack     func()
	// forced: a cancel sent after the operation was asserted cancelled,
	// so its worker stops what it holds and skips what it has not
	// picked up; nothing waits for its answer.
	forced bool
}

// gate is the entry count that must be stored before what the session
// decided so far may leave the host.
func (s *Session) gate() int {
	if s.led == nil || s.ended {
		return 0
	}
	return s.led.Len()
}

func (s *Session) queue(e effect) { s.outbox = append(s.outbox, e) }

// gateAck holds ack until what the session recorded so far is stored.
func (s *Session) gateAck(ack func()) {
	if ack == nil {
		return
	}
	if s.relinquished {
		ack()
		return
	}
	upTo := s.gate()
	if s.ended && s.MayExist() && !s.removed {
		// Held until the ledger's removal is done, which is once the
		// outcome is stored elsewhere: until then the ledger is what a
		// later process replays, and it may need this answer.
		upTo = math.MaxInt
	}
	s.queue(effect{upTo: upTo, kind: effAck, ack: ack})
}

// release runs ack now, if set.
func (s *Session) release(ack func()) {
	if ack != nil {
		ack()
	}
}

// HasReady reports whether Ready has anything to hand out.
func (s *Session) HasReady() bool {
	switch {
	case s.relinquished:
		return !s.notified
	case len(s.settled) > 0, !s.accepted && s.acceptable():
		return true
	case s.appendDue(), s.removalDue():
		return true
	}
	for _, e := range s.outbox {
		if !s.held(e) {
			return true
		}
	}
	return false
}

// held: e waits for its entries to be stored, or, once the session ended,
// for its ledger's removal (which follows the outcome stored elsewhere).
func (s *Session) held(e effect) bool {
	if s.led == nil || e.upTo <= s.persisted {
		return false
	}
	return !(s.removed && (e.kind == effAck || e.forced))
}

// Ready hands out what the session's driver must do now (see Ready); each
// thing is handed out once.
func (s *Session) Ready() Ready {
	var rd Ready
	rd.Settled, s.settled = s.settled, nil
	if s.relinquished {
		if !s.notified {
			s.notified = true
			rd.Relinquish = true
			rd.Acks = s.takeAcks()
		}
		return rd
	}
	if !s.accepted && s.acceptable() {
		// Alone: the driver answers the submission before anything of
		// the session leaves the host, so a submitter found gone can
		// still have it withdrawn with nothing dispatched.
		s.accepted = true
		rd.Accepted = true
		return rd
	}
	keep := s.outbox[:0]
	for _, e := range s.outbox {
		if s.held(e) {
			keep = append(keep, e)
			continue
		}
		switch e.kind {
		case effAck:
			rd.Acks = append(rd.Acks, e.ack)
		case effPublish:
			if s.publishable(e) {
				e.op.sent = true
				rd.Publish = append(rd.Publish, e.op)
			}
		case effCancel:
			if (e.forced || s.ops[e.op.ID] == e.op) && e.op.Inv.Attempt == e.attempt {
				inv := e.op.Inv
				rd.Cancel = append(rd.Cancel, CancelOut{Op: e.op, Request: host.ExternalToolCancellationRequest{
					ID: inv.ID, Tool: inv.Tool, CallIndex: inv.CallIndex, Attempt: inv.Attempt, IdempotencyKey: inv.IdempotencyKey,
				}})
			}
		}
	}
	clear(s.outbox[len(keep):])
	s.outbox = keep
	if s.appendDue() {
		rd.Append = &Append{From: s.persisted, Entries: slices.Clone(s.led.Entries(s.persisted))}
		if s.appends >= max(CompactAfter, s.led.Len()/4) {
			rd.Append.All = slices.Clone(s.led.Entries(0))
			s.rewriting = true
		}
		s.writing = s.led.Len()
	}
	if s.removalDue() {
		s.removing = true
		rd.Remove = &Removal{Acks: s.takeAcks()}
	} else if s.ended && (s.led == nil || !s.MayExist() && s.writing == 0) {
		rd.Acks = append(rd.Acks, s.takeAcks()...)
	}
	return rd
}

// publishable: the effect's attempt is still the operation's current one,
// the operation is live, and its cancellation was not asked meanwhile.
func (s *Session) publishable(e effect) bool {
	if s.ops[e.op.ID] != e.op || e.op.Inv.Attempt != e.attempt {
		return false
	}
	info, ok := s.rt.Operation(e.op.ID)
	return ok && info.State == host.Claimed
}

// acceptable: the submission may be answered.
func (s *Session) acceptable() bool {
	return s.led == nil || s.persisted > 0 || s.ended
}

func (s *Session) appendDue() bool {
	return s.led != nil && !s.ended && s.writing == 0 && !s.retrying && s.persisted < s.led.Len()
}

func (s *Session) removalDue() bool {
	return s.ended && !s.removing && s.MayExist() && s.writing == 0
}

// takeAcks hands over every acknowledgement still held.
func (s *Session) takeAcks() []func() {
	var out []func()
	keep := s.outbox[:0]
	for _, e := range s.outbox {
		if e.kind == effAck {
			out = append(out, e.ack)
			continue
		}
		keep = append(keep, e)
	}
	clear(s.outbox[len(keep):])
	s.outbox = keep
	return out
}

// Stored reports that the Append handed out is stored: the ledger holds
// upTo entries.
func (s *Session) Stored(upTo int) {
	s.writing = 0
	if upTo > s.persisted {
		s.persisted = upTo
	}
	if s.rewriting {
		s.appends, s.rewriting = 0, false
	} else {
		s.appends++
	}
}

// WriteFailed reports that the Append handed out failed in a way that
// leaves unknown whether it was stored. The session waits for RetryWrite
// before it writes again.
func (s *Session) WriteFailed() {
	s.writing, s.rewriting = 0, false
	s.retrying = true
	s.unsure = true
}

// RetryWrite lets a session whose write failed write again (or, ended,
// remove its ledger).
func (s *Session) RetryWrite() { s.retrying = false }

// Conflict reports that another owner wrote the ledger: the session is
// theirs now. Ready reports Relinquish, with every held acknowledgement.
func (s *Session) Conflict() {
	s.writing, s.rewriting = 0, false
	s.relinquished = true
}

// Unstored is what of the ledger is not stored yet, for a driver that
// stores it outside Ready (as it stops); nil when all is stored or a
// write is in flight.
func (s *Session) Unstored() *Append {
	if s.led == nil || s.ended || s.writing != 0 || s.persisted >= s.led.Len() {
		return nil
	}
	return &Append{From: s.persisted, Entries: s.led.Entries(s.persisted)}
}

// Removed reports that the ledger's removal handed out is done: the
// session's outcome is stored elsewhere, so the acknowledgements held for
// it are let go at the next Ready.
func (s *Session) Removed() { s.removed = true }

// Relinquished reports whether another owner took the session.
func (s *Session) Relinquished() bool { return s.relinquished }

// Acknowledge holds ack, the transport acknowledgement of an event that
// recorded nothing of its own, until what the session recorded so far is
// stored: an event the session took before a write it may depend on is
// not let go before that write.
func (s *Session) Acknowledge(ack func()) { s.gateAck(ack) }
