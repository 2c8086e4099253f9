package idempotency

import (
	"context"
	"fmt"
	"time"
)

// Journal is the replay-safe record of operations keyed by idempotency key.
// Every method is safe for concurrent use by many goroutines and processes:
// each write is a compare-and-set on the record's revision, so of two
// writers racing on one key exactly one wins and the other learns it.
type Journal interface {
	// Begin asks to run the operation named by key. The outcome says what
	// the caller may do: run it (Fresh, TakenOver), wait for the live
	// owner (RunningElsewhere) or replay the stored result (Done). lease
	// is how long the caller may hold the operation without renewing. A
	// claim is not re-entrant: to a Begin by the owner holding the lease
	// it is RunningElsewhere, as to anyone.
	Begin(ctx context.Context, key, owner string, lease time.Duration) (Claim, error)
	// Resume is Begin for an owner that may hold the lease already
	// without knowing it: its Begin failed with an error that leaves the
	// write's fate unknown (an answer lost with the connection, a
	// timeout), so the record may be its own. A running record whose
	// Owner is owner, expired or not, is given back: the lease is
	// extended by lease from now and the outcome is Resumed, which holds
	// it. Anything else is answered as Begin answers it. The journal
	// cannot tell a lost answer from a second claimant under the same
	// owner id, so owner ids must be unique per claimant, and an owner
	// resumes only a claim it never ran under.
	Resume(ctx context.Context, key, owner string, lease time.Duration) (Claim, error)
	// Renew extends a held lease by the claim's lease duration from now
	// and returns the claim to use next. ErrLeaseLost means the caller no
	// longer owns the operation and must stop producing effects.
	Renew(ctx context.Context, c Claim) (Claim, error)
	// Finish stores the terminal result of a held claim; later Begins see
	// Done and replay it. ErrLeaseLost means another owner took over and
	// this result was not stored.
	Finish(ctx context.Context, c Claim, r Result) error
	// Release gives a held lease back without a result, so the next Begin
	// is Fresh rather than TakenOver: the operation did not start its
	// effect, or stopped it cleanly, and may simply run again.
	Release(ctx context.Context, c Claim) error
	// Store records r as the terminal result of key without a claim,
	// unless a result is stored already: the one write of an operation
	// that may run more than once, which runs without Begin. It returns
	// the record that holds the key's result afterwards: r's, with stored
	// true, or the result stored earlier, with stored false, which a
	// caller that has not answered yet answers with instead of r. A
	// running or released record is overwritten; its holder's later
	// Renew, Finish and Release fail with ErrLeaseLost.
	Store(ctx context.Context, key, owner string, r Result) (rec Record, stored bool, err error)
	// Get returns the current record of key, or ErrNotFound.
	Get(ctx context.Context, key string) (Record, error)
}

// Outcome is what Begin or Resume found.
type Outcome uint8

// Begin and Resume outcomes. Fresh, TakenOver and Resumed hold the lease;
// the others do not.
const (
	// Fresh: no live record existed (never begun, or released); the caller
	// holds the lease and runs the operation.
	Fresh Outcome = iota + 1
	// RunningElsewhere: another claim holds an unexpired lease; the caller
	// must not run the operation and should wait or hand the work back.
	RunningElsewhere
	// Done: a terminal result is stored in Claim.Record.Result; the caller
	// replays it instead of running the operation.
	Done
	// TakenOver: the previous owner's lease expired without a result; the
	// caller now holds the lease. Whether the earlier attempt produced its
	// effect is unknown, so an idempotent operation may run again and a
	// non-idempotent one should finish as indeterminate.
	TakenOver
	// Resumed (Resume only): the record already held the caller's own
	// lease, written by an earlier Begin of the same owner whose answer
	// was lost; the caller holds it again, extended. Whether the lease
	// was fresh or taken over is in Record.TakenOver (Claim.EffectUnknown).
	Resumed
)

// String returns the outcome's lower-case name.
func (o Outcome) String() string {
	switch o {
	case Fresh:
		return "fresh"
	case RunningElsewhere:
		return "running_elsewhere"
	case Done:
		return "done"
	case TakenOver:
		return "taken_over"
	case Resumed:
		return "resumed"
	default:
		return fmt.Sprintf("outcome(%d)", uint8(o))
	}
}

// Claim is the answer of Begin and Renew. It carries the record as the
// caller last saw it, including the revision that later writes compare
// against; pass the latest claim to Renew, Finish or Release.
type Claim struct {
	Outcome Outcome
	// Owner is who asked; Record.Owner is who holds the lease.
	Owner string
	// Lease is the duration requested at Begin; Renew extends by it.
	Lease time.Duration
	// Record is the stored record after Begin or Renew.
	Record Record
}

// Held reports whether the claim holds the lease, that is whether the
// caller may run the operation and must end it with Finish or Release.
func (c Claim) Held() bool {
	return c.Outcome == Fresh || c.Outcome == TakenOver || c.Outcome == Resumed
}

// EffectUnknown reports whether a held claim follows an earlier holder
// that lost its lease without a result, so that whether the effect
// happened is unknown: the claim took the lease over (TakenOver), or
// resumed a lease that its owner had taken over.
func (c Claim) EffectUnknown() bool {
	return c.Outcome == TakenOver || (c.Outcome == Resumed && c.Record.TakenOver)
}

// Revision is the record revision the claim's next write compares against.
func (c Claim) Revision() uint64 { return c.Record.Revision }

func validateBegin(key, owner string, lease time.Duration) error {
	if err := validateStore(key, owner); err != nil {
		return err
	}
	if lease <= 0 {
		return fmt.Errorf("%w: %v", ErrInvalidLease, lease)
	}
	return nil
}

func validateStore(key, owner string) error {
	switch {
	case key == "":
		return fmt.Errorf("%w: %q", ErrInvalidKey, key)
	case owner == "":
		return fmt.Errorf("%w: %q", ErrInvalidOwner, owner)
	}
	return nil
}

func validateHeld(c Claim) error {
	if !c.Held() {
		return fmt.Errorf("%w: outcome %s", ErrNotHeld, c.Outcome)
	}
	if c.Record.Key == "" {
		return fmt.Errorf("%w: %q", ErrInvalidKey, c.Record.Key)
	}
	if c.Lease <= 0 {
		return fmt.Errorf("%w: %v", ErrInvalidLease, c.Lease)
	}
	return nil
}
