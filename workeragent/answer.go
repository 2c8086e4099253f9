package workeragent

import (
	"context"
	"errors"
	"math"

	"github.com/splashfabric/splashfabric/idempotency"
	"github.com/splashfabric/splashfabric/protocol"
)

// replayFrame numbers a terminal frame replayed from the journal above any
// frame the original run could have sent in the same attempt, so a host
// that saw the original chunks still accepts it.
const replayFrame = math.MaxUint32

// tooLargeResult replaces a result the journal refuses for its size.
var tooLargeResult = idempotency.Result{Status: idempotency.StatusFailed, Error: "result exceeds the journal's size bound"}

func (e *execution) finish(r idempotency.Result) { e.finishAt(r, 1) }

// finishAt stores r as the call's terminal result and answers as frame k,
// followed by then. The invocation is acked only once the answer is
// stored in the events stream, so a redelivery after a lost answer
// replays (claimed) or stores again and finds (unclaimed) the journal's
// result instead of changing it.
func (e *execution) finishAt(r idempotency.Result, k uint32, then ...protocol.WorkerMessage) {
	if !e.claimed() {
		e.storeAt(r, k, then...)
		return
	}
	j := e.a.cfg.Journal
	if f, ok := j.(idempotency.Fitter); ok && f.Fits(r) {
		// The journal vouches that r fits, so the answer need not wait
		// for the write, which saves a round trip per call. It is made
		// once the stream holds the answer, not while the answer is on
		// its way: a journal write in the server at that moment delays
		// the event's delivery to the host, and afterwards it overlaps
		// the host's own work instead.
		published := e.publishAnswer(e.messageOf(r), k, then...)
		ferr := e.endClaim(func(ctx context.Context, c idempotency.Claim) error { return j.Finish(ctx, c, r) })
		switch {
		case errors.Is(ferr, idempotency.ErrLeaseLost):
			// The answer is out, but the key has another holder now:
			// the redelivery meets that holder in the journal, and the
			// host keeps the first answer of the attempt.
			e.a.log.Warn("lease lost before finish", "request", e.inv.RequestID)
			_ = e.msg.Nak()
			return
		case ferr != nil:
			e.a.log.Warn("journal finish failed", "request", e.inv.RequestID, "err", ferr)
		}
		e.settle(published)
		return
	}
	// Otherwise the journal is written first, because a refused result
	// changes the answer.
	finish := func(ctx context.Context, c idempotency.Claim) error { return j.Finish(ctx, c, r) }
	err := e.endClaim(finish)
	if errors.Is(err, idempotency.ErrResultTooLarge) {
		r = tooLargeResult
		err = e.endClaim(finish)
	}
	switch {
	case errors.Is(err, idempotency.ErrLeaseLost):
		e.a.log.Warn("lease lost before finish", "request", e.inv.RequestID)
		_ = e.msg.Nak()
		return
	case err != nil:
		// The answer still goes out: the host needs it more than the
		// journal does, and a later duplicate finds an expired lease.
		e.a.log.Warn("journal finish failed", "request", e.inv.RequestID, "err", err)
	}
	e.answer(e.messageOf(r), k, then...)
}

// storeAt ends an unclaimed call (a tool declared idempotent): its
// answer, published on the operation's answer subject, is the stored
// result, so the call costs no journal write. The stream keeps the first
// answer stored on the subject; if a copy of the call (a republish past
// the duplicate window, a concurrent redelivery) stored one first, that
// one is the answer, as the journal's Store made it. The tool is
// idempotent, so either result is true. Follow-ups go to the host's
// events subject, after the answer in stream order, so the answer stays
// the subject's last message.
func (e *execution) storeAt(r idempotency.Result, k uint32, then ...protocol.WorkerMessage) {
	msg := e.messageOf(r)
	err := e.a.publishStored(e, msg, k, true)
	if errors.Is(err, errAnswerStored) {
		ctx, cancel := opContext()
		stored, found, lerr := e.a.lookupAnswer(ctx, e.host, e.inv.Tool, e.inv.IdempotencyKey)
		cancel()
		if found {
			e.a.dedupeHit(e.t.name)
			e.answer(e.rebind(stored), k, then...)
			return
		}
		if lerr != nil {
			// The host still needs this call's answer, on its events
			// subject.
			e.a.log.Warn("stored answer unreadable; answering without it", "request", e.inv.RequestID, "err", lerr)
			e.answer(msg, k, then...)
			return
		}
		// The subject holds no answer: a forgery (counted by
		// lookupAnswer), or one that expired meanwhile. This answer is
		// stored over it unconditionally, so later duplicates find an
		// authentic one; a copy that stores beside it is as true.
		err = e.a.publishStored(e, msg, k, false)
	}
	if err != nil {
		e.answerFailed(err)
		e.settle(false)
		return
	}
	for i, m := range then {
		if err := e.a.publishEvent(e, m, max(k, 1)+1+uint32(i)); err != nil {
			e.answerFailed(err)
		}
	}
	e.settle(true)
}

// replay answers from a stored record.
func (e *execution) replay(rec idempotency.Record) {
	if rec.Result == nil {
		_ = e.msg.NakWithDelay(e.a.cfg.HeartbeatInterval)
		return
	}
	e.answer(e.messageOf(*rec.Result), replayFrame)
}

// rebind binds a stored answer (see fabric.LookupAnswer), which names the
// request and attempt that produced it, to this execution's.
func (e *execution) rebind(stored protocol.WorkerMessage) protocol.WorkerMessage {
	id, att := e.inv.RequestID, e.inv.Attempt
	if stored.CancelDisp != nil {
		d := *stored.CancelDisp
		d.RequestID, d.Attempt = id, att
		return protocol.CancelReplyMessage(d)
	}
	r := *stored.Result
	r.RequestID, r.Attempt = id, att
	return protocol.ResultMessage(r)
}

// messageOf is the wire answer for a stored result, bound to this attempt.
func (e *execution) messageOf(r idempotency.Result) protocol.WorkerMessage {
	id, att := e.inv.RequestID, e.inv.Attempt
	if r.Error == "" && r.Status != idempotency.StatusSucceeded && r.Status != idempotency.StatusCancelled {
		r.Error = string(r.Status)
	}
	if r.Status == idempotency.StatusSucceeded && r.Payload == nil {
		empty := protocol.TextPayload("")
		r.Payload = &empty
	}
	switch r.Status {
	case idempotency.StatusCancelled:
		return protocol.CancelReplyMessage(protocol.CancelReply{RequestID: id, Attempt: att, Disposition: protocol.CancelAcknowledged})
	case idempotency.StatusSucceeded:
		return protocol.ResultMessage(protocol.Result{RequestID: id, Attempt: att, Status: protocol.ResultSucceeded, Payload: r.Payload})
	case idempotency.StatusIndeterminate:
		return protocol.ResultMessage(protocol.Result{RequestID: id, Attempt: att, Status: protocol.ResultIndeterminate, Error: r.Error})
	default:
		return protocol.ResultMessage(protocol.Result{RequestID: id, Attempt: att, Status: protocol.ResultFailed, Error: r.Error})
	}
}

// answer publishes msg (and then any follow-ups) as terminal events and
// acks the invocation once the stream has stored them; on failure the
// invocation is redelivered and the journal replays the stored answer.
func (e *execution) answer(msg protocol.WorkerMessage, k uint32, then ...protocol.WorkerMessage) {
	e.settle(e.publishAnswer(msg, k, then...))
}

// settle acks the invocation once its answer is stored, and otherwise
// puts it back for redelivery.
func (e *execution) settle(published bool) {
	if published {
		_ = e.msg.Ack()
	} else {
		_ = e.msg.Nak()
	}
}

// publishAnswer publishes msg as frame k and, once the stream has stored
// it, its follow-ups as frames k+1, …; it reports whether msg itself was
// stored.
func (e *execution) publishAnswer(msg protocol.WorkerMessage, k uint32, then ...protocol.WorkerMessage) bool {
	if err := e.a.publishEvent(e, msg, k); err != nil {
		e.answerFailed(err)
		return false
	}
	for i, m := range then {
		if err := e.a.publishEvent(e, m, max(k, 1)+1+uint32(i)); err != nil {
			e.answerFailed(err)
		}
	}
	return true
}

func (e *execution) answerFailed(err error) {
	e.a.stats.publishErrors.Add(1)
	e.a.log.Warn("publish answer failed", "request", e.inv.RequestID, "err", err)
}
