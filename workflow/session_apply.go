package workflow

import (
	"fmt"

	"github.com/splashfabric/splashfabric/host"
)

// taken is what applying one input gave back.
type taken struct {
	res *host.EvalResult
	// inv is a retry's next attempt.
	inv host.ExternalInvocation
	// expired are the operations an expiry ended.
	expired []host.ExternalToolID
}

// apply hands one input to the runtime: the one mapping from what a ledger
// records to the runtime's methods, and the session's bookkeeping that
// follows each. A live session calls it before recording the input; a
// restored one calls it for each entry read back. An input the runtime
// refuses changes nothing, and is not recorded.
func (s *Session) apply(a Applied) (taken, error) {
	var t taken
	var err error
	op := s.ops[a.Op]
	switch a.Kind {
	case InputSucceeded:
		t.res, err = s.rt.CompleteExternalTool(a.Op, host.Ok(a.Output))
	case InputFailed:
		t.res, err = s.rt.CompleteExternalTool(a.Op, host.Fail(a.Error))
	case InputRetryTransient, InputRetryRateLimited:
		class := host.RetryTransient
		if a.Kind == InputRetryRateLimited {
			class = host.RetryRateLimited
		}
		if t.inv, err = s.rt.RetryExternalTool(a.Op, class); err == nil && op != nil {
			op.Inv, op.AttemptAt, op.sent = t.inv, s.now(), false
		}
	case InputExpire:
		t.expired, t.res = s.rt.ExpireTimedOutTools()
	case InputCancelRequested:
		_, err = s.rt.RequestExternalToolCancellation(a.Op)
	case InputCancelConfirmed:
		t.res, err = s.rt.ConfirmExternalToolCancellation(a.Op)
	case InputCancelForced:
		t.res, err = s.rt.CancelExternalToolBecause(a.Op, forcedReason(s.ending))
	case InputStreamed:
		err = s.rt.RestoreStreamUsage(a.Op, host.StreamUsage{Chunks: a.Stream.Chunks, SourceBytes: a.Stream.SourceBytes, ReleasedBytes: a.Stream.ReleasedBytes})
	case InputSessionCancel:
		if s.ending != "" {
			return t, fmt.Errorf("%w: the session is being ended already (%s)", ErrSessionEnded, s.ending)
		}
		s.ending = a.Reason
	default:
		return t, fmt.Errorf("%w: input kind %q", ErrInvalidEntry, a.Kind)
	}
	if err != nil {
		return taken{}, err
	}
	s.keep(t.res)
	if op != nil {
		s.settleIfTerminal(op)
	}
	for _, id := range t.expired {
		if op := s.ops[id]; op != nil {
			s.forget(op)
		}
	}
	return t, nil
}

// after runs what follows every input, live or replayed, in the same way:
// an ending session cancels what its script starts before anything is
// dispatched, and ends once no operation is live.
func (s *Session) after() {
	if s.ending == "" || s.rt.Running() {
		return
	}
	for {
		inv, ok := s.rt.ClaimNextExternalTool()
		if !ok {
			break
		}
		res, _ := s.rt.CancelExternalToolBecause(inv.ID, "cancelled before dispatch: the session is being ended")
		if res != nil && s.ending == "" {
			s.result = res
		}
	}
	if len(s.ops) == 0 && !s.Done() {
		s.result = &host.EvalResult{Err: endError(s.ending)}
	}
}

// endError is the outcome of a session ended for reason.
func endError(reason EndReason) error {
	switch reason {
	case EndLifetime:
		return fmt.Errorf("%w: its live operations were cancelled", ErrMaxLifetime)
	}
	return fmt.Errorf("%w by an operator: its live operations were cancelled", ErrSessionCancelled)
}

func forcedReason(ending EndReason) string {
	if ending == EndLifetime {
		return "cancelled by the host without waiting for its worker: the session outlived its max lifetime"
	}
	return "cancelled by an operator without waiting for its worker (forced)"
}

// record appends a live input the runtime accepted to the ledger, after
// the stream counts of the operations that streamed since they were last
// recorded: an entry that settles an operation must find it live when it
// is replayed.
func (s *Session) record(a Applied) {
	if s.led == nil || s.ended {
		return
	}
	for _, op := range s.Ops() {
		if !op.streamDirty {
			continue
		}
		op.streamDirty = false
		info, ok := s.rt.Operation(op.ID)
		if !ok {
			continue
		}
		s.append(Applied{Kind: InputStreamed, Op: op.ID, Stream: &StreamCount{Chunks: info.Chunks, SourceBytes: info.SourceBytes, ReleasedBytes: info.ReleasedBytes}})
	}
	s.append(a)
}

// append adds one entry. The ledger refuses only what the session itself
// got wrong, which would leave a gap a replay stops at: it panics, as a
// violated invariant should.
func (s *Session) append(a Applied) {
	if _, err := s.led.Apply(s.now(), a); err != nil {
		panic(fmt.Sprintf("workflow: recording an input the runtime took: %v", err))
	}
}

// input applies a live input and records it.
func (s *Session) input(a Applied) (taken, error) {
	if s.relinquished {
		return taken{}, fmt.Errorf("%w: another owner took the session", ErrSessionEnded)
	}
	t, err := s.apply(a)
	if err != nil {
		return t, err
	}
	s.record(a)
	s.after()
	return t, nil
}
