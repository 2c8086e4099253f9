package workeragent

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/splashfabric/splashfabric/idempotency"
	"github.com/splashfabric/splashfabric/protocol"
)

// replayFrame numbers a terminal frame replayed from the journal above any
// frame the original run could have sent in the same attempt, so a host
// that saw the original chunks still accepts it.
const replayFrame = math.MaxUint32

// execution is one invocation message from admission to its ack. Its
// goroutine (started by onMessage) owns every field except those marked
// as guarded by a.mu, which the cancel callback and cancelAll also touch.
type execution struct {
	a   *Agent
	t   *tool
	msg jetstream.Msg

	// Set before the execution enters a.running, then only read.
	inv      protocol.Invoke
	host     string
	deadline time.Time
	writer   *ChunkWriter

	claim    idempotency.Claim
	slotHeld bool

	// Guarded by a.mu while the execution is in a.running.
	started         bool // the handler runs (or is about to)
	cancel          context.CancelCauseFunc
	cancelAsked     bool
	draining        bool
	unsupportedSent bool
}

func (e *execution) freeSlot() {
	if e.slotHeld {
		e.slotHeld = false
		<-e.t.slots
	}
}

func opContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), opTimeout)
}

// process takes the message through authentication, the cancel record,
// the journal and the handler, and ends with exactly one of ack, nak or
// term.
func (e *execution) process() {
	a := e.a
	e.slotHeld = true
	defer e.freeSlot()

	meta, err := e.msg.Metadata()
	if err == nil && meta.NumDelivered > 1 {
		a.stats.redeliveries.Add(1)
	}
	inv, host, err := a.openInvoke(e.msg)
	if err == nil && inv.Tool != e.t.name {
		err = fmt.Errorf("invoke for tool %q on the subject of %q", inv.Tool, e.t.name)
	}
	if err != nil {
		// A forged or malformed invocation is never run and never
		// redelivered: no retry can make its tag valid.
		a.stats.forged.Add(1)
		a.log.Warn("rejected invocation", "tool", e.t.name, "err", err)
		_ = e.msg.Term()
		return
	}
	e.inv, e.host = inv, host
	if meta != nil {
		e.deadline = deadlineOf(meta.Timestamp, inv.DeadlineMillis)
	}
	e.writer = newChunkWriter(inv.Stream, func(c protocol.Chunk, k uint32) error {
		c.RequestID = inv.RequestID
		return a.publishChunk(e, c, k)
	})

	// Register before reading the cancel record: the host writes the
	// record before it broadcasts, so this order cannot miss both.
	a.mu.Lock()
	a.running[e] = struct{}{}
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		delete(a.running, e)
		a.mu.Unlock()
	}()

	// The local copy of the cancel records answers at once; only when it
	// cannot be trusted (just after a reconnect) is the bucket read, in
	// parallel with the journal, which it is independent of.
	type lookup struct {
		recorded bool
		err      error
	}
	var cancelled chan lookup
	recorded, sure := a.cancelNoted(inv)
	if !sure {
		cancelled = make(chan lookup, 1)
		a.goTracked(func() {
			ctx, cancel := opContext()
			defer cancel()
			ok, err := a.cancelRecorded(ctx, inv)
			cancelled <- lookup{ok, err}
		})
	}
	owner := a.cfg.WorkerID + "/" + strconv.FormatUint(a.owner.Add(1), 10)
	ctx, cancel := opContext()
	claim, err := a.cfg.Journal.Begin(ctx, inv.IdempotencyKey, owner, a.cfg.LeaseDuration)
	cancel()
	var l lookup
	if cancelled != nil {
		l = <-cancelled
	}
	if err == nil && l.err != nil && claim.Outcome == idempotency.Fresh {
		// Without knowing whether the call was cancelled it must not run;
		// give the key back so the redelivery starts fresh. A taken-over
		// claim is left to expire instead: releasing it would erase that
		// an earlier holder may have produced the effect.
		e.claim = claim
		e.releaseClaim()
	}
	if err == nil {
		err = l.err
	}
	if err != nil {
		a.log.Warn("pickup failed", "request", inv.RequestID, "err", err)
		_ = e.msg.NakWithDelay(a.cfg.HeartbeatInterval)
		return
	}
	// Look once more: the journal's round trip gave a record stored just
	// before the pull time to reach the watcher.
	if !recorded {
		recorded, _ = a.cancelNoted(inv)
	}
	recorded = recorded || l.recorded
	e.claim = claim
	switch claim.Outcome {
	case idempotency.Done:
		a.stats.dedupeHits.Add(1)
		e.replay(claim.Record)
		return
	case idempotency.RunningElsewhere:
		// Another holder runs this key; come back when its lease would
		// have expired, by which time it has finished or crashed.
		a.stats.deferred.Add(1)
		delay := time.Until(claim.Record.LeaseExpiresAt)
		delay = min(max(delay, a.cfg.HeartbeatInterval), a.cfg.LeaseDuration)
		_ = e.msg.NakWithDelay(delay)
		return
	case idempotency.TakenOver:
		a.stats.takenOver.Add(1)
		if !e.t.spec.idempotent {
			a.stats.indeterminate.Add(1)
			e.finish(idempotency.Result{
				Status: idempotency.StatusIndeterminate,
				Error:  "an earlier holder lost its lease without a result; its effect is unknown",
			})
			return
		}
	}

	hctx, hcancel := context.WithCancelCause(context.Background())
	defer hcancel(nil)
	if !e.deadline.IsZero() {
		var stop context.CancelFunc
		hctx, stop = context.WithDeadlineCause(hctx, e.deadline, ErrDeadlineElapsed)
		defer stop()
	}
	a.mu.Lock()
	e.started = true
	e.cancel = hcancel
	asked, stopping := e.cancelAsked, a.stopping
	a.mu.Unlock()
	switch {
	case recorded || asked:
		// Nothing ran: acknowledging is true, and storing it makes a
		// duplicate of this attempt acknowledge too instead of running.
		a.stats.cancelledBeforeStart.Add(1)
		e.finish(idempotency.Result{Status: idempotency.StatusCancelled})
	case !e.deadline.IsZero() && !time.Now().Before(e.deadline):
		// Nothing ran, so the key stays free; the host has timed the
		// call out already and only records this answer.
		e.releaseClaim()
		e.answer(protocol.ResultMessage(protocol.Result{
			RequestID: inv.RequestID, Attempt: inv.Attempt,
			Status: protocol.ResultFailed, Error: ErrDeadlineElapsed.Error() + " before the call started",
		}), 1)
	case stopping:
		// The agent stopped while this call waited on the journal: do not
		// start work that the drain would only have to hand back.
		a.stats.givenBack.Add(1)
		e.giveBack()
	default:
		e.run(hctx, hcancel)
	}
}

// deadlineOf turns the host's remaining deadline into a point in time,
// measured from when the stream stored the invocation (the closest this
// side knows to when the host claimed it).
func deadlineOf(stored time.Time, millis int64) time.Time {
	if millis <= 0 {
		return time.Time{}
	}
	if now := time.Now(); stored.IsZero() || stored.After(now) {
		stored = now
	}
	return stored.Add(time.Duration(millis) * time.Millisecond)
}

type handlerReturn struct {
	out Output
	err error
}

// run executes the handler while heartbeating, then answers.
func (e *execution) run(hctx context.Context, cancel context.CancelCauseFunc) {
	a, inv := e.a, e.inv
	call := &Call{
		Tool: inv.Tool, RequestID: inv.RequestID, IdempotencyKey: inv.IdempotencyKey,
		Input: inv.Input, CallIndex: inv.CallIndex, Attempt: inv.Attempt, AttemptLimit: inv.AttemptLimit,
		Deadline: e.deadline, OutputLimit: inv.OutputLimit,
		TakenOver: e.claim.Outcome == idempotency.TakenOver, Stream: e.writer,
	}
	a.stats.executed.Add(1)
	ret := make(chan handlerReturn, 1)
	a.goTracked(func() { ret <- callHandler(hctx, e.t.handler, call) })

	tick := time.NewTicker(a.cfg.HeartbeatInterval)
	defer tick.Stop()
	leaseLost := false
	var r handlerReturn
wait:
	for {
		select {
		case r = <-ret:
			break wait
		case <-tick.C:
			if err := e.heartbeat(); errors.Is(err, idempotency.ErrLeaseLost) && !leaseLost {
				leaseLost = true
				cancel(idempotency.ErrLeaseLost)
			}
		}
	}

	k := e.writer.close()
	a.mu.Lock()
	cancelAsked, draining, unsupported := e.cancelAsked, e.draining, e.unsupportedSent
	a.mu.Unlock()
	e.freeSlot()

	if leaseLost {
		// Someone else holds the key now and answers for it.
		a.log.Warn("lease lost while running", "request", inv.RequestID)
		_ = e.msg.Nak()
		return
	}
	v := classify(r.out, r.err, cancelAsked && e.t.spec.cancellable, draining)
	tooLate := e.tooLate(cancelAsked && !unsupported)
	switch v.kind {
	case verdictGiveBack:
		a.stats.givenBack.Add(1)
		e.giveBack()
	case verdictCancelled:
		e.finishAt(idempotency.Result{Status: idempotency.StatusCancelled}, k+1)
	case verdictRetryTransient, verdictRetryRateLimited:
		// Retryables are never stored: the host's next attempt must run.
		e.releaseClaim()
		res := protocol.Result{RequestID: inv.RequestID, Attempt: inv.Attempt, Status: protocol.ResultRetryTransient, Error: v.err}
		if v.kind == verdictRetryRateLimited {
			res.Status = protocol.ResultRetryRateLimited
			// Round up so a sub-millisecond wait is not lost.
			res.RetryAfterMillis = int64((v.retryAfter + time.Millisecond - 1) / time.Millisecond)
		}
		e.answer(protocol.ResultMessage(res), k+1, tooLate...)
	case verdictSucceeded:
		p := v.payload
		e.finishAt(idempotency.Result{Status: idempotency.StatusSucceeded, Payload: &p}, k+1, tooLate...)
	default:
		e.finishAt(idempotency.Result{Status: idempotency.StatusFailed, Error: v.err}, k+1, tooLate...)
	}
}

// tooLate is the disposition that follows a result which won the race
// against a cancellation request.
func (e *execution) tooLate(asked bool) []protocol.WorkerMessage {
	if !asked {
		return nil
	}
	return []protocol.WorkerMessage{protocol.CancelReplyMessage(protocol.CancelReply{
		RequestID: e.inv.RequestID, Attempt: e.inv.Attempt, Disposition: protocol.CancelTooLate,
	})}
}

func callHandler(ctx context.Context, h Handler, call *Call) (r handlerReturn) {
	defer func() {
		if p := recover(); p != nil {
			r = handlerReturn{err: Permanent(fmt.Errorf("handler panicked: %v", p))}
		}
	}()
	out, err := h.HandleCall(ctx, call)
	return handlerReturn{out: out, err: err}
}

// heartbeat tells the stream the call is alive and renews the lease.
func (e *execution) heartbeat() error {
	_ = e.msg.InProgress()
	ctx, cancel := context.WithTimeout(context.Background(), e.a.cfg.HeartbeatInterval)
	defer cancel()
	c, err := e.a.cfg.Journal.Renew(ctx, e.claim)
	if err != nil {
		e.a.log.Warn("lease renewal failed", "request", e.inv.RequestID, "err", err)
		return err
	}
	e.claim = c
	return nil
}

func (e *execution) releaseClaim() {
	ctx, cancel := opContext()
	defer cancel()
	if err := e.a.cfg.Journal.Release(ctx, e.claim); err != nil {
		e.a.log.Warn("journal release failed", "request", e.inv.RequestID, "err", err)
	}
}

// giveBack returns the call to the stream for another agent.
func (e *execution) giveBack() {
	e.releaseClaim()
	_ = e.msg.Nak()
}

func (e *execution) finish(r idempotency.Result) { e.finishAt(r, 1) }

// finishAt stores r and answers with it as frame k. The journal write and
// the answer go out together when the journal vouches that r fits, which
// saves a round trip per call; the invocation is acked only once both are
// stored, so a redelivery after a lost answer replays r instead of running
// the tool again. Otherwise the journal is written first, because a
// refused result changes the answer.
func (e *execution) finishAt(r idempotency.Result, k uint32, then ...protocol.WorkerMessage) {
	if f, ok := e.a.cfg.Journal.(idempotency.Fitter); ok && f.Fits(r) {
		finished := make(chan error, 1)
		e.a.goTracked(func() {
			ctx, cancel := opContext()
			defer cancel()
			finished <- e.a.cfg.Journal.Finish(ctx, e.claim, r)
		})
		published := e.publishAnswer(e.messageOf(r), k, then...)
		err := <-finished
		switch {
		case errors.Is(err, idempotency.ErrLeaseLost):
			// The answer is out, but the key has another holder now:
			// the redelivery meets that holder in the journal, and the
			// host keeps the first answer of the attempt.
			e.a.log.Warn("lease lost before finish", "request", e.inv.RequestID)
			_ = e.msg.Nak()
			return
		case err != nil:
			e.a.log.Warn("journal finish failed", "request", e.inv.RequestID, "err", err)
		}
		if published {
			_ = e.msg.Ack()
		} else {
			_ = e.msg.Nak()
		}
		return
	}
	ctx, cancel := opContext()
	err := e.a.cfg.Journal.Finish(ctx, e.claim, r)
	if errors.Is(err, idempotency.ErrResultTooLarge) {
		r = idempotency.Result{Status: idempotency.StatusFailed, Error: "result exceeds the journal's size bound"}
		err = e.a.cfg.Journal.Finish(ctx, e.claim, r)
	}
	cancel()
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

// replay answers from a stored record.
func (e *execution) replay(rec idempotency.Record) {
	if rec.Result == nil {
		_ = e.msg.NakWithDelay(e.a.cfg.HeartbeatInterval)
		return
	}
	e.answer(e.messageOf(*rec.Result), replayFrame)
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
	if e.publishAnswer(msg, k, then...) {
		_ = e.msg.Ack()
	} else {
		_ = e.msg.Nak()
	}
}

// publishAnswer publishes msg and its follow-ups as frames k, k+1, …; it
// reports whether msg itself was stored.
func (e *execution) publishAnswer(msg protocol.WorkerMessage, k uint32, then ...protocol.WorkerMessage) bool {
	if k == 0 {
		k = 1
	}
	msgs := append([]protocol.WorkerMessage{msg}, then...)
	for i, m := range msgs {
		if err := e.a.publishEvent(e, m, k+uint32(i)); err != nil {
			e.a.stats.publishErrors.Add(1)
			e.a.log.Warn("publish answer failed", "request", e.inv.RequestID, "err", err)
			if i == 0 {
				return false
			}
		}
	}
	return true
}
