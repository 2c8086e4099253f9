package workeragent

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/splashfabric/splashfabric/idempotency"
)

// A pickup decides, before any handler runs, whether this delivery may
// run: it consults the cancel records and the journal. It reports whether
// a cancellation was recorded for the call and whether process should go
// on to the handler; when it should not, the pickup has already answered,
// deferred or handed the message back.

// pickupClaimed claims the call's key in the journal (beginClaim), for
// tools whose effect must not happen twice.
func (e *execution) pickupClaimed() (recorded, proceed bool) {
	a, inv := e.a, e.inv
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
	_, dspan := e.a.tracer.Start(e.pickupCtx, "dedupe", trace.WithAttributes(attrJournal.String("claim")))
	claim, err := e.beginClaim()
	if err == nil {
		dspan.SetAttributes(attribute.String("splash.claim", claim.Outcome.String()))
	}
	dspan.End()
	var l lookup
	if cancelled != nil {
		l = <-cancelled
	}
	if err == nil && l.err != nil && claim.Held() && !claim.EffectUnknown() {
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
		e.pickupFailed(err)
		return false, false
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
		a.dedupeHit(e.t.name)
		e.pickup = "dedupe_hit"
		e.replay(claim.Record)
		return false, false
	case idempotency.RunningElsewhere:
		// Another holder runs this key; come back when its lease would
		// have expired, by which time it has finished or crashed.
		a.stats.deferred.Add(1)
		e.pickup = "running_elsewhere"
		delay := time.Until(claim.Record.LeaseExpiresAt)
		delay = min(max(delay, a.cfg.HeartbeatInterval), a.cfg.LeaseDuration)
		_ = e.msg.NakWithDelay(delay)
		return false, false
	}
	if claim.EffectUnknown() {
		// Only tools that must not run twice are claimed, so the effect
		// of the lost holder is unknown and cannot be repeated. (A
		// resumed claim that had taken over lost that answer, so it is
		// counted here too.)
		a.stats.takenOver.Add(1)
		a.stats.indeterminate.Add(1)
		e.pickup, e.outcome = "taken_over", OutcomeIndeterminate
		e.finish(idempotency.Result{
			Status: idempotency.StatusIndeterminate,
			Error:  "an earlier holder lost its lease without a result; its effect is unknown",
		})
		return false, false
	}
	return recorded, true
}

// beginClaim claims the call's key: Begin, and while the journal's
// answers are lost (the node that took the write went away, a timeout),
// Resume under the same owner id. A Begin that fails that way may have
// written the claim all the same; asked again with Begin, the journal
// would show this execution its own claim as another holder's, and once
// the lease ran out as one taken over, so the call would end
// indeterminate although nothing ran. Resume gives the claim back
// (idempotency.Resumed). The owner id names this execution alone, which
// ran nothing under it, so the claim Resume finds under it cannot be one
// that produced an effect.
//
// While it retries, the message is reported in progress every heartbeat
// (the first Begin may take opTimeout, more than a short ack wait), so it
// stays with this execution rather than meeting its own claim elsewhere.
// It gives up, leaving the message to pickupFailed, on an error no retry
// can change, once the lease has passed (a claim of its own would have
// expired, and the key is better handed on), or when the drain cancels
// the agent's calls.
func (e *execution) beginClaim() (idempotency.Claim, error) {
	a, key := e.a, e.inv.IdempotencyKey
	owner, lease := e.ownerID(), a.cfg.LeaseDuration
	hb := e.startHeartbeat(func(error) {})
	defer hb.stop()
	ctx, cancel := opContext()
	claim, err := a.cfg.Journal.Begin(ctx, key, owner, lease)
	cancel()
	if !unanswered(err) {
		return claim, err
	}
	a.log.Warn("journal claim unanswered; resuming it", "request", e.inv.RequestID, "owner", owner, "err", err)
	tries, err := e.retryUnanswered(err, unanswered, func(ctx context.Context) (err error) {
		claim, err = a.cfg.Journal.Resume(ctx, key, owner, lease)
		return err
	})
	if err != nil {
		a.log.Warn("journal claim still unanswered", "request", e.inv.RequestID, "owner", owner, "tries", tries, "err", err)
	} else {
		a.log.Info("journal claim answered", "request", e.inv.RequestID, "owner", owner, "outcome", claim.Outcome, "tries", tries)
	}
	return claim, err
}

// resumeBackoff is the first pause before an unanswered journal write is
// made again (retryUnanswered); it doubles up to the heartbeat interval.
const resumeBackoff = 100 * time.Millisecond

// unanswered reports a journal error that leaves unknown whether the
// write landed, as opposed to a refusal no retry can change (or none).
func unanswered(err error) bool {
	if err == nil {
		return false
	}
	for _, never := range []error{idempotency.ErrCorruptRecord, idempotency.ErrInvalidKey, idempotency.ErrInvalidOwner, idempotency.ErrInvalidLease} {
		if errors.Is(err, never) {
			return false
		}
	}
	return true
}

// drainStarted reports that the agent's drain has cancelled its calls:
// a pickup still waiting on the journal stops there.
func (e *execution) drainStarted() bool {
	e.a.mu.Lock()
	defer e.a.mu.Unlock()
	return e.a.draining
}

// pickupUnclaimed readies a call of a tool declared idempotent. Running
// it twice is what the registration allows, so it takes no claim and
// writes no journal record: its answer, stored on the operation's answer
// subject (see storeAt), is the record. The common pickup costs no round
// trip. Only a delivery that may repeat an earlier one, a redelivery or a
// later attempt, reads the answer subject first, so that an answer stored
// already is replayed instead of run again.
func (e *execution) pickupUnclaimed() (recorded, proceed bool) {
	a, inv := e.a, e.inv
	recorded, sure := a.cancelNoted(inv)
	if !sure {
		ctx, cancel := opContext()
		found, err := a.cancelRecorded(ctx, inv)
		cancel()
		if err != nil {
			e.pickupFailed(err)
			return false, false
		}
		recorded = found
	}
	if e.firstDelivery() {
		return recorded, true
	}
	ctx, cancel := opContext()
	_, dspan := e.a.tracer.Start(e.pickupCtx, "dedupe", trace.WithAttributes(attrJournal.String("stored_answer")))
	stored, found, err := a.lookupAnswer(ctx, e.host, inv.Tool, inv.IdempotencyKey)
	dspan.SetAttributes(attribute.Bool("splash.found", found))
	dspan.End()
	cancel()
	switch {
	case found:
		a.dedupeHit(e.t.name)
		e.pickup = "dedupe_hit"
		e.answer(e.rebind(stored), replayFrame)
		return false, false
	case err != nil:
		// Running again is what the registration allows; the answer
		// this run stores is refused if one was stored after all, and
		// that one is answered instead (storeAt).
		a.log.Warn("stored answer unreadable; running", "request", inv.RequestID, "err", err)
	}
	if e.redelivered {
		// The earlier delivery of this attempt was never acked and left
		// no answer: whatever it did may have happened.
		a.stats.takenOver.Add(1)
		e.takenOver = true
	}
	// The read gave a record stored just before the pull time to reach
	// the watcher.
	if !recorded {
		recorded, _ = a.cancelNoted(inv)
	}
	return recorded, true
}

// pickupFailed puts the message back for a later try: the journal or the
// cancel bucket could not be read, and running blind is not allowed.
func (e *execution) pickupFailed(err error) {
	e.pickup = "failed"
	e.a.log.Warn("pickup failed", "request", e.inv.RequestID, "err", err)
	_ = e.msg.NakWithDelay(e.a.cfg.HeartbeatInterval)
}
