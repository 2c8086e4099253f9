package workflow

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/protocol"
)

// Claim claims every operation the script started and holds each until it
// may be published: a durable session first prepares it in its ledger, and
// Ready hands out its publish once that entry is stored. It returns the
// operations claimed. An ending session claims nothing: what its script
// starts is cancelled before it is dispatched.
func (s *Session) Claim() []*Op {
	if s.ended || s.relinquished || s.rt.Diverged() != nil || s.rt.Running() {
		return nil
	}
	if s.ending != "" {
		s.after()
		return nil
	}
	var out []*Op
	for {
		inv, ok := s.rt.ClaimNextExternalTool()
		if !ok {
			return out
		}
		op := &Op{ID: inv.ID, RequestID: s.newRequest(), Inv: inv, AttemptAt: s.now()}
		s.ops[op.ID] = op
		gate := 0
		if s.led != nil {
			i, err := s.led.Prepare(s.now(), Prepared{
				Op: op.ID, CallIndex: inv.CallIndex, Tool: inv.Tool, Input: inv.Input,
				Key: inv.IdempotencyKey, Request: op.RequestID,
			})
			if err != nil {
				// A record that would stand in for an earlier one: the
				// operation is never dispatched. Nothing of it is in the
				// ledger, so nothing of its end is recorded either.
				res, _ := s.rt.CompleteExternalTool(op.ID, host.Fail(err.Error()))
				s.keep(res)
				s.forget(op)
				continue
			}
			op.prep, gate = i, i+1
		}
		s.queue(effect{upTo: gate, kind: effPublish, op: op, attempt: inv.Attempt})
		out = append(out, op)
	}
}

// Pump runs the session's host-pumped (local) calls, at most rounds of
// them; it reports whether more wait.
func (s *Session) Pump(rounds int) (more bool, err error) {
	for i := 0; i < rounds && s.rt.LocalPending(); i++ {
		res, err := s.rt.Pump()
		if err != nil {
			return s.rt.LocalPending(), err
		}
		s.keep(res)
	}
	s.after()
	return s.rt.LocalPending(), nil
}

// Answered says what a worker's answer did to its operation.
type Answered struct {
	// Retry: the answer was retryable and the next attempt is
	// recorded; the driver publishes it (Republish) after its backoff.
	Retry bool
	// After is a rate-limited answer's retry-after: the backoff is at
	// least this long.
	After time.Duration
	// Class is the retry's class.
	Class host.RetryClass
}

// Answer applies a worker's terminal answer to op's current attempt: a
// result settles it; a retryable failure records the next attempt (or
// confirms a requested cancellation, since the attempt stopped without a
// result, which is what was asked; or fails the operation at its attempt
// limit, or expires it past its deadline). ack is released once what the
// answer changed is stored.
func (s *Session) Answer(op *Op, r protocol.Result, ack func()) (Answered, error) {
	defer s.gateAck(ack)
	if err := s.check(op); err != nil {
		return Answered{}, err
	}
	switch r.Status {
	case protocol.ResultSucceeded:
		_, err := s.input(Applied{Kind: InputSucceeded, Op: op.ID, Output: payloadText(r.Payload)})
		return Answered{}, err
	case protocol.ResultFailed:
		_, err := s.input(Applied{Kind: InputFailed, Op: op.ID, Error: r.Error})
		return Answered{}, err
	case protocol.ResultIndeterminate:
		_, err := s.input(Applied{Kind: InputFailed, Op: op.ID, Error: "indeterminate: " + r.Error})
		return Answered{}, err
	case protocol.ResultRetryTransient, protocol.ResultRetryRateLimited:
	default:
		return Answered{}, fmt.Errorf("%w: result status %q", protocol.ErrInvalidMessage, r.Status)
	}
	if info, ok := s.rt.Operation(op.ID); ok && info.State == host.CancellationRequested {
		_, err := s.input(Applied{Kind: InputCancelConfirmed, Op: op.ID})
		return Answered{}, err
	}
	kind, class := InputRetryTransient, host.RetryTransient
	if r.Status == protocol.ResultRetryRateLimited {
		kind, class = InputRetryRateLimited, host.RetryRateLimited
	}
	_, err := s.input(Applied{Kind: kind, Op: op.ID})
	switch {
	case err == nil:
		out := Answered{Retry: true, Class: class}
		if class == host.RetryRateLimited && r.RetryAfterMillis > 0 {
			out.After = time.Duration(r.RetryAfterMillis) * time.Millisecond
		}
		return out, nil
	case errors.Is(err, host.ErrRetryLimitReached):
		_, err = s.input(Applied{Kind: InputFailed, Op: op.ID, Error: r.Error})
		return Answered{}, err
	case errors.Is(err, host.ErrDeadlineElapsed):
		s.Expire()
		return Answered{}, nil
	}
	return Answered{}, err
}

// Chunk releases one chunk of op's progress through the runtime's stream
// bounds and redactor. Chunks are not recorded one by one: the counts
// they leave are recorded with the session's next entry.
func (s *Session) Chunk(op *Op, text string) (host.ExternalToolStreamChunk, error) {
	if err := s.check(op); err != nil {
		return host.ExternalToolStreamChunk{}, err
	}
	c, err := s.rt.PushExternalToolChunk(op.ID, text)
	if err == nil {
		op.streamDirty = true
	}
	return c, err
}

// CancelAcknowledged takes a worker's acknowledgement that op stopped
// without a result: the operation ends cancelled. An acknowledgement of a
// cancellation this session has no record of asking (one asked by an
// earlier process whose record was lost) is taken all the same, as the
// request and its confirmation: the attempt stopped, and waiting for an
// answer that will never come would wedge the session.
func (s *Session) CancelAcknowledged(op *Op, ack func()) error {
	defer s.gateAck(ack)
	if err := s.check(op); err != nil {
		return err
	}
	if info, ok := s.rt.Operation(op.ID); ok && info.State == host.Claimed {
		if _, err := s.input(Applied{Kind: InputCancelRequested, Op: op.ID}); err != nil {
			return err
		}
	}
	_, err := s.input(Applied{Kind: InputCancelConfirmed, Op: op.ID})
	return err
}

// RequestCancel asks for op to be cancelled, two-phase: once the request's
// entry is stored, Ready hands out the cancel for op's worker. An attempt
// no worker holds (held for its prepared entry, or between attempts) is
// cancelled at once, since nothing can run it.
func (s *Session) RequestCancel(op *Op) error {
	if err := s.check(op); err != nil {
		return err
	}
	if info, ok := s.rt.Operation(op.ID); ok && info.State == host.CancellationRequested {
		return fmt.Errorf("%w: %s", host.ErrCancellationRequested, op.ID)
	}
	if _, err := s.input(Applied{Kind: InputCancelRequested, Op: op.ID}); err != nil {
		return err
	}
	if !op.sent {
		_, err := s.input(Applied{Kind: InputCancelConfirmed, Op: op.ID})
		return err
	}
	s.queue(effect{upTo: s.gate(), kind: effCancel, op: op, attempt: op.Inv.Attempt})
	return nil
}

// ResendCancel hands out op's cancel again, for a resumed operation whose
// cancellation an earlier process had asked.
func (s *Session) ResendCancel(op *Op) {
	if s.check(op) == nil {
		s.queue(effect{upTo: s.gate(), kind: effCancel, op: op, attempt: op.Inv.Attempt})
	}
}

// ForceCancel is the host's terminal assertion that op is cancelled, made
// without waiting for its worker (the reference's cancel_external_tool),
// recorded with its audit event. A published operation's worker is still
// told, once the entry is stored, so that it stops the call or skips it
// at pickup instead of spending the pool on an effect nobody awaits; its
// answer, if any, finds no operation and is dropped.
func (s *Session) ForceCancel(op *Op) error {
	if err := s.check(op); err != nil {
		return err
	}
	if _, err := s.input(Applied{Kind: InputCancelForced, Op: op.ID}); err != nil {
		return err
	}
	if op.sent {
		s.queue(effect{upTo: s.gate(), kind: effCancel, op: op, attempt: op.Inv.Attempt, forced: true})
	}
	return nil
}

// Expire ends every operation whose deadline passed and reports them.
func (s *Session) Expire() []host.ExternalToolID {
	if s.relinquished {
		return nil
	}
	t, _ := s.apply(Applied{Kind: InputExpire})
	if len(t.expired) > 0 {
		// Replayed, the entry expires the same operations: the runtime's
		// clock is then at the entry's time, which is this one.
		s.record(Applied{Kind: InputExpire})
	}
	s.after()
	return t.expired
}

// Republish hands out op's current attempt to publish once what explains
// it is stored: after a retry's backoff, or again when a publish failed.
// An operation whose cancellation is requested is not published again.
func (s *Session) Republish(op *Op) {
	if s.check(op) != nil {
		return
	}
	s.queue(effect{upTo: s.gate(), kind: effPublish, op: op, attempt: op.Inv.Attempt})
}

// Reconciled applies what a tool's workers said of op as DecideReconcile
// says, and returns the action. horizonPassed: no delivery of op's
// invocation is due any more. An operation nobody knows of is dispatched
// again only for an idempotent tool and only if its cancellation was not
// requested (then it is cancelled: nothing holds it and nothing will run
// it); a claimed tool's ends indeterminate, so no effect runs twice.
func (s *Session) Reconciled(op *Op, st protocol.OperationStatus, horizonPassed bool) (ReconcileAction, error) {
	if err := s.check(op); err != nil {
		return 0, err
	}
	action, err := DecideReconcile(st.State, op.Inv.Idempotent, horizonPassed)
	if err != nil {
		return 0, err
	}
	switch action {
	case ReconcileApply:
		switch st.State {
		case protocol.OperationSucceeded:
			_, err = s.input(Applied{Kind: InputSucceeded, Op: op.ID, Output: payloadText(st.Payload)})
		case protocol.OperationFailed:
			_, err = s.input(Applied{Kind: InputFailed, Op: op.ID, Error: st.Error})
		case protocol.OperationCancelled:
			err = s.CancelAcknowledged(op, nil)
		}
	case ReconcileRedispatch:
		if info, ok := s.rt.Operation(op.ID); ok && info.State == host.CancellationRequested {
			_, err = s.input(Applied{Kind: InputCancelConfirmed, Op: op.ID})
			return ReconcileApply, err
		}
		s.Republish(op)
	case ReconcileIndeterminate:
		_, err = s.input(Applied{Kind: InputFailed, Op: op.ID, Error: "indeterminate: no worker knows of the operation, and its invocation can no longer be delivered; its effect may have happened and is not repeated"})
	}
	return action, err
}

// CancelSession ends the session before its script does: every live
// operation is cancelled (two-phase; with force, asserted cancelled at
// once without its worker), nothing its script starts from now on is
// dispatched, and the session ends with reason as its outcome once no
// operation is live. Asked again, it only forces what is left.
func (s *Session) CancelSession(reason EndReason, force bool) error {
	switch {
	case s.relinquished || s.ended || s.Done():
		return fmt.Errorf("%w: nothing left to cancel", ErrSessionEnded)
	case !reason.valid():
		return fmt.Errorf("%w: end reason %q", ErrInvalidEntry, reason)
	}
	if s.ending == "" {
		if _, err := s.input(Applied{Kind: InputSessionCancel, Reason: reason}); err != nil {
			return err
		}
	}
	var errs []error
	for _, op := range s.Ops() {
		info, ok := s.rt.Operation(op.ID)
		switch {
		case !ok || info.State.Terminal():
		case force:
			errs = append(errs, s.ForceCancel(op))
		case info.State == host.Claimed:
			errs = append(errs, s.RequestCancel(op))
		}
	}
	s.after()
	return errors.Join(errs...)
}

// Withdraw ends a durable session whose submitter left before its ledger
// was first stored: nothing it claimed was published, so every operation
// is cancelled without a worker, the session ends with why, and nothing of
// it is recorded (its ledger goes).
func (s *Session) Withdraw(why error) error {
	for _, op := range s.ops {
		if op.sent {
			return fmt.Errorf("%w: %s was handed out to publish", ErrSessionEnded, op.ID)
		}
	}
	for _, op := range s.Ops() {
		_, _ = s.rt.CancelExternalTool(op.ID)
		s.forget(op)
	}
	s.result = &host.EvalResult{Err: why}
	s.End()
	return nil
}

// End closes the session once its outcome is final: nothing more is
// recorded, operations still held for their prepared entries are never
// published, and Ready hands out the ledger's removal once no write of it
// is in flight. Operations already out (dropped promises) stay live until
// they settle.
func (s *Session) End() {
	if s.ended {
		return
	}
	s.ended = true
	for _, op := range s.Ops() {
		if !op.sent {
			s.forget(op)
		}
	}
	keep := s.outbox[:0]
	for _, e := range s.outbox {
		switch {
		case e.kind == effAck:
			keep = append(keep, e)
		case e.forced:
			// Its entry is never stored now: the outcome, stored
			// elsewhere before the ledger goes, explains it instead.
			if s.led != nil && e.upTo > s.persisted {
				e.upTo = math.MaxInt
			}
			keep = append(keep, e)
		}
	}
	clear(s.outbox[len(keep):])
	s.outbox = keep
}

// Ended reports whether End was called.
func (s *Session) Ended() bool { return s.ended }

// check refuses an input for an operation the session does not hold live.
func (s *Session) check(op *Op) error {
	switch {
	case s.relinquished:
		return fmt.Errorf("%w: another owner took the session", ErrSessionEnded)
	case op == nil || s.ops[op.ID] != op:
		return fmt.Errorf("%w: %v", ErrUnknownOperation, opName(op))
	}
	return nil
}

func opName(op *Op) string {
	if op == nil {
		return "none"
	}
	return op.ID.String()
}

// payloadText is a worker payload as the runtime takes an output.
func payloadText(p *protocol.WorkerPayload) string {
	if p == nil {
		return ""
	}
	if p.Format == protocol.FormatJSON {
		return string(p.JSON)
	}
	return p.Text
}
