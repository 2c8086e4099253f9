package workeragent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/splashfabric/splashfabric/idempotency"
)

// endClaim makes write, the claim's last journal write (Finish or
// Release), and makes it again while its answer is lost. An unanswered
// write may have landed or not; left as it is, a write that did not land
// leaves the key running under this execution until its lease runs out,
// and the next delivery then meets it as a lost holder's and ends the
// call indeterminate: a retryable failure that is never retried, a
// result that is never replayed. A write refused as a lost lease is
// looked into the same way, since the claim may only be behind its own
// record: a renewal whose answer was lost moved the record on.
//
// Before each try the record is read: still running under this claim
// (the same owner and claim count), the claim is resumed (which gives it
// back at the revision its own writes left) and written again; ended
// under this claim, the write landed; under another claim, the lease is
// lost. The tries stop as beginClaim's do (retryUnanswered).
func (e *execution) endClaim(write func(context.Context, idempotency.Claim) error) error {
	ctx, cancel := opContext()
	err := write(ctx, e.claim)
	cancel()
	if !lostAnswer(err) && !errors.Is(err, idempotency.ErrLeaseLost) {
		return err
	}
	e.a.log.Warn("journal write unanswered or refused; looking at the record", "request", e.inv.RequestID, "err", err)
	again := func(ctx context.Context) error { return e.writeAgain(ctx, write) }
	ctx, cancel = opContext()
	err = again(ctx)
	cancel()
	_, err = e.retryUnanswered(err, lostAnswer, again)
	return err
}

// retryUnanswered makes try again while more(err) says the journal's
// answer to the last try was lost: backing off from resumeBackoff to the
// heartbeat interval, for at most a lease (a claim of this execution's
// own would have expired by then), and not once the drain starts. It
// returns how many tries it made and the last one's error.
func (e *execution) retryUnanswered(err error, more func(error) bool, try func(context.Context) error) (tries int, _ error) {
	a := e.a
	giveUp := time.Now().Add(a.cfg.LeaseDuration)
	wait := min(resumeBackoff, a.cfg.HeartbeatInterval)
	for more(err) && time.Now().Before(giveUp) && !e.drainStarted() {
		time.Sleep(wait)
		wait = min(2*wait, a.cfg.HeartbeatInterval)
		tries++
		ctx, cancel := opContext()
		err = try(ctx)
		cancel()
	}
	return tries, err
}

// writeAgain is one more try of a write that went unanswered or found the
// claim behind its record.
func (e *execution) writeAgain(ctx context.Context, write func(context.Context, idempotency.Claim) error) error {
	c, ended, err := e.resumeOwn(ctx)
	if err != nil || ended {
		return err
	}
	return write(ctx, c)
}

// resumeOwn gives this execution its claim back at the revision its own
// writes left, after one of them went unanswered. It reads the record
// first, so it never writes a claim this execution did not hold: under
// another claim (another owner or claim count) the lease is lost; ended
// under this claim (or gone past the horizon), ended is true and there is
// nothing to resume; still running under it, Resume under the owner id
// gives it back.
func (e *execution) resumeOwn(ctx context.Context) (c idempotency.Claim, ended bool, err error) {
	j, key := e.a.cfg.Journal, e.inv.IdempotencyKey
	rec, err := j.Get(ctx, key)
	switch {
	case errors.Is(err, idempotency.ErrNotFound):
		return c, true, nil
	case err != nil:
		return c, false, err
	case rec.Owner != e.claim.Owner || rec.Claims != e.claim.Record.Claims:
		return c, false, fmt.Errorf("%w: %q", idempotency.ErrLeaseLost, key)
	case rec.State != idempotency.StateRunning:
		return c, true, nil
	}
	c, err = j.Resume(ctx, key, e.claim.Owner, e.claim.Lease)
	switch {
	case err != nil:
		return c, false, err
	case c.Outcome != idempotency.Resumed:
		// Moved on between the read and the resume: the next try reads
		// what it became.
		return idempotency.Claim{}, false, errAnswerMoved
	}
	// Still the claim pickup took: only its record moved on.
	c.Outcome = e.claim.Outcome
	e.claim = c
	return c, false, nil
}

// errAnswerMoved makes endClaim read the record again.
var errAnswerMoved = errors.New("workeragent: the claim's record moved on while it was resumed")

// lostAnswer reports a journal error after which the write may or may not
// have landed.
func lostAnswer(err error) bool {
	if !unanswered(err) {
		return false
	}
	for _, answered := range []error{idempotency.ErrLeaseLost, idempotency.ErrResultTooLarge, idempotency.ErrInvalidResult, idempotency.ErrNotHeld, idempotency.ErrContended} {
		if errors.Is(err, answered) {
			return false
		}
	}
	return true
}
