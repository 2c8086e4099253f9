package workeragent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/splashfabric/splashfabric/idempotency"
	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/tracing"
)

// execution is one invocation message from admission to its ack. Its
// goroutine (started by onMessage) owns every field except those marked
// as guarded by a.mu, which the cancel callback and cancelAll also touch,
// and claim, which its heartbeat renews while the handler runs.
type execution struct {
	a   *Agent
	t   *tool
	msg jetstream.Msg

	// Set before the execution enters a.running, then only read.
	inv         protocol.Invoke
	host        string
	deadline    time.Time
	writer      *ChunkWriter
	redelivered bool   // the stream delivered this message before
	deliveries  uint64 // how often the stream delivered it, this time included

	// claim is held by a claimed call (a tool not declared idempotent)
	// from Begin to its Finish or Release; an unclaimed call never holds
	// one. While the handler runs, the heartbeat owns it (see heartbeat).
	claim idempotency.Claim
	// takenOver: an earlier holder of the key may have produced the
	// effect without a result (Call.TakenOver).
	takenOver bool
	slotHeld  bool

	// tctx holds span, the invocation's span, from onMessage on;
	// hspan is the handler's span while it runs (its chunks are its
	// events). outcome and pickup say how the call and its pickup
	// ended, for the spans. Only the execution's goroutine writes them,
	// before the handler starts (hspan) or after it returned.
	tctx      context.Context
	span      trace.Span
	hspan     trace.Span
	outcome   string
	pickup    string
	pickupCtx context.Context

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

// claimed reports whether the call goes through a journal claim: every
// tool except those declared idempotent (see pickupUnclaimed).
func (e *execution) claimed() bool { return !e.t.spec.idempotent }

// firstDelivery reports a first delivery of a first attempt: nothing but
// a concurrent copy can have stored an answer for its key, so an unclaimed
// call does not look for one before running.
func (e *execution) firstDelivery() bool { return !e.redelivered && e.inv.Attempt <= 1 }

// ownerID names this execution in the journal: unique per execution, so
// that a second delivery to the same agent is a different owner, and per
// process, so that a worker restarted under the same WorkerID (a
// container keeps its hostname) never takes an owner id of its previous
// life, whose claims may have run. A pickup resumes a claim under its
// owner id (beginClaim), which is safe only for a claim nothing ran under.
func (e *execution) ownerID() string {
	return e.a.cfg.WorkerID + "/" + incarnation + "/" + strconv.FormatUint(e.a.owner.Add(1), 10)
}

// incarnation tells this process's owner ids from those of earlier
// processes under the same WorkerID.
var incarnation = func() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}()

func opContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), opTimeout)
}

// process takes an authenticated message (see onMessage) through the
// contract check, the cancel record, the journal and the handler, and ends
// with exactly one of ack, nak or term.
func (e *execution) process() {
	a := e.a
	e.slotHeld = true
	defer e.freeSlot()

	meta, err := e.msg.Metadata()
	if err == nil {
		e.deliveries = meta.NumDelivered
		if meta.NumDelivered > 1 {
			a.stats.redeliveries.Add(1)
			a.obs.Redelivered(e.t.name)
			e.redelivered = true
		}
	}
	inv := e.inv
	if why := e.t.contractMismatch(inv.Contract); why != "" {
		// Running the call under another definition could repeat an
		// effect the host believes guarded, or stream where it expects
		// none: the call fails, clearly, without running.
		a.stats.contractMismatches.Add(1)
		a.obs.ContractMismatch(e.t.name)
		a.log.Warn("refused invocation under another definition", "tool", e.t.name, "request", inv.RequestID, "why", why)
		e.outcome = "contract_mismatch"
		e.answer(protocol.ResultMessage(protocol.Result{
			RequestID: inv.RequestID, Attempt: inv.Attempt, Status: protocol.ResultFailed,
			Error: ErrContractMismatch.Error() + ": " + why,
		}), 1)
		return
	}
	if meta != nil {
		e.deadline = deadlineOf(meta.Timestamp, inv.DeadlineMillis)
	}
	e.writer = newChunkWriter(inv.Stream, func(c protocol.Chunk, k uint32) error {
		c.RequestID = inv.RequestID
		e.chunkEvent(k, len(c.Text))
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

	pickup := e.pickupClaimed
	if !e.claimed() {
		pickup = e.pickupUnclaimed
	}
	var pspan trace.Span
	e.pickupCtx, pspan = e.child("pickup")
	recorded, proceed := pickup()
	e.endPickup(pspan, proceed)
	if !proceed {
		return
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
		e.outcome = OutcomeCancelled
		e.finish(idempotency.Result{Status: idempotency.StatusCancelled})
	case !e.deadline.IsZero() && !time.Now().Before(e.deadline):
		// Nothing ran, so the key stays free; the host has timed the
		// call out already and only records this answer.
		e.outcome = OutcomeFailed
		e.releaseClaim()
		e.answer(protocol.ResultMessage(protocol.Result{
			RequestID: inv.RequestID, Attempt: inv.Attempt,
			Status: protocol.ResultFailed, Error: ErrDeadlineElapsed.Error() + " before the call started",
		}), 1)
	case stopping:
		// The agent stopped while this call waited on the journal: do not
		// start work that the drain would only have to hand back.
		a.stats.givenBack.Add(1)
		e.outcome = OutcomeHandedBack
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

// run executes the handler on the execution's own goroutine while the
// heartbeat keeps the call alive, then answers.
func (e *execution) run(hctx context.Context, cancel context.CancelCauseFunc) {
	a, inv := e.a, e.inv
	call := &Call{
		Tool: inv.Tool, RequestID: inv.RequestID, IdempotencyKey: inv.IdempotencyKey,
		Input: inv.Input, CallIndex: inv.CallIndex, Attempt: inv.Attempt, AttemptLimit: inv.AttemptLimit,
		Deadline: e.deadline, OutputLimit: inv.OutputLimit,
		TakenOver: e.takenOver, Stream: e.writer, e: e,
	}
	a.stats.executed.Add(1)
	a.obs.HandlerStarted(e.t.name)
	began := time.Now()
	hctx = trace.ContextWithSpan(hctx, e.span)
	hctx, e.hspan = a.tracer.Start(hctx, "handler "+e.t.name, trace.WithAttributes(tracing.AttrTool.String(e.t.name)))
	hb := e.startHeartbeat(cancel)
	r := callHandler(hctx, e.t.handler, call)
	leaseLost := hb.stop()

	k := e.writer.close()
	a.mu.Lock()
	cancelAsked, draining, unsupported := e.cancelAsked, e.draining, e.unsupportedSent
	a.mu.Unlock()
	e.freeSlot()

	if leaseLost {
		// Someone else holds the key now and answers for it.
		e.outcome = OutcomeHandedBack
		e.endHandlerSpan("lease_lost")
		a.handlerDone(e, OutcomeHandedBack, time.Since(began))
		a.log.Warn("lease lost while running", "request", inv.RequestID)
		_ = e.msg.Nak()
		return
	}
	v := classify(r.out, r.err, cancelAsked && e.t.spec.cancellable, draining)
	if v.kind == verdictGiveBack && !draining && e.lastDelivery() {
		// The stream will not deliver it again: a hand back now would
		// leave the call without an end.
		v = verdict{kind: verdictFailed, err: v.err + " (on the last delivery the stream allows)"}
	}
	e.outcome = v.label()
	e.endHandlerSpan(e.outcome)
	a.handlerDone(e, v.label(), time.Since(began))
	_, aspan := e.child("answer", tracing.AttrOutcome.String(e.outcome))
	defer aspan.End()
	tooLate := e.tooLate(cancelAsked && !unsupported)
	switch v.kind {
	case verdictGiveBack:
		a.stats.givenBack.Add(1)
		e.giveBack()
	case verdictIndeterminate:
		a.stats.indeterminate.Add(1)
		e.finishAt(idempotency.Result{Status: idempotency.StatusIndeterminate, Error: v.err}, k+1, tooLate...)
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

// lastDelivery reports that the stream will not deliver this message
// again.
func (e *execution) lastDelivery() bool {
	return e.deliveries >= uint64(e.a.cfg.Fabric.MaxDeliver)
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

// releaseClaim gives a held claim back; an unclaimed call has nothing to
// give back.
func (e *execution) releaseClaim() {
	if !e.claim.Held() {
		return
	}
	if err := e.endClaim(e.a.cfg.Journal.Release); err != nil {
		e.a.log.Warn("journal release failed", "request", e.inv.RequestID, "err", err)
	}
}

// giveBack returns the call to the stream for another agent.
func (e *execution) giveBack() {
	e.releaseClaim()
	_ = e.msg.Nak()
}

// endHandlerSpan ends the handler's span with how its run ended.
func (e *execution) endHandlerSpan(outcome string) {
	e.hspan.SetAttributes(tracing.AttrOutcome.String(outcome))
	if outcome == OutcomeFailed || outcome == OutcomeIndeterminate {
		e.hspan.SetStatus(codes.Error, outcome)
	}
	e.hspan.End()
}
