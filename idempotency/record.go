package idempotency

import (
	"time"
)

// State is the stored state of a record.
//
// Transitions, each one compare-and-set on the revision:
//
//	(none)   --Begin-->            running   Fresh
//	released --Begin-->            running   Fresh
//	running  --Begin, expired-->   running   TakenOver (new owner)
//	running  --Resume, own-->      running   Resumed (same owner, later expiry)
//	running  --Renew-->            running   (same owner, later expiry)
//	running  --Finish-->           done
//	running  --Release-->          released
//	(none)   --Store-->            done      (no claim)
//	running  --Store-->            done      (the holder loses its lease)
//	released --Store-->            done
//
// done is terminal until the dedupe horizon removes the record: Begin
// replays it, and Store returns it instead of writing.
type State string

// Record states.
const (
	StateRunning  State = "running"
	StateDone     State = "done"
	StateReleased State = "released"
)

// Record is what the journal stores for one idempotency key.
type Record struct {
	// Key is the idempotency key itself; the storage key is its digest
	// (see StorageKey).
	Key   string `json:"key"`
	State State  `json:"state"`
	// Owner holds the lease while running; for done, it stored the result.
	Owner string `json:"owner,omitempty"`
	// PreviousOwner is the owner before the last Begin that took the
	// record over or re-claimed it after a release.
	PreviousOwner string `json:"previous_owner,omitempty"`
	// Claims counts the leases granted for this key (Fresh and TakenOver).
	Claims uint32 `json:"claims"`
	// Takeovers counts the leases taken from an expired owner.
	Takeovers uint32 `json:"takeovers,omitempty"`
	// TakenOver reports that the last lease granted for the key was
	// taken from an expired owner (Begin answered TakenOver), so its
	// holder follows one that may have produced the effect; a fresh
	// grant clears it. A Resume of that lease reads it here.
	TakenOver bool `json:"taken_over,omitempty"`
	// LeaseExpiresAt is when a running record's lease ends, by the clock of
	// the owner that last wrote it.
	LeaseExpiresAt time.Time `json:"lease_expires_at,omitzero"`
	CreatedAt      time.Time `json:"created_at"`
	UpdatedAt      time.Time `json:"updated_at"`
	// Result is set when State is done.
	Result *Result `json:"result,omitempty"`
	// Revision is the store's revision of this record; it is not part of
	// the stored value.
	Revision uint64 `json:"-"`
}

// Expired reports whether a running record's lease has ended at now.
func (r Record) Expired(now time.Time) bool {
	return r.State == StateRunning && !now.Before(r.LeaseExpiresAt)
}

// The transitions below are pure so that every Journal applies the same
// rules and differs only in how it stores records.

func newRunning(key, owner string, lease time.Duration, now time.Time) Record {
	return Record{
		Key:            key,
		State:          StateRunning,
		Owner:          owner,
		Claims:         1,
		LeaseExpiresAt: now.Add(lease),
		CreatedAt:      now,
		UpdatedAt:      now,
	}
}

// beginRule applies Begin (decide) or Resume (decideResume) to an
// existing record.
type beginRule func(cur Record, owner string, lease time.Duration, now time.Time) (next Record, o Outcome, write bool)

// decide applies Begin to an existing record. write reports whether next
// must be stored (the caller then holds the lease if the write wins).
func decide(cur Record, owner string, lease time.Duration, now time.Time) (next Record, o Outcome, write bool) {
	switch {
	case cur.State == StateDone:
		return cur, Done, false
	case cur.State == StateRunning && !cur.Expired(now):
		return cur, RunningElsewhere, false
	}
	next = cur
	next.State = StateRunning
	next.PreviousOwner = cur.Owner
	next.Owner = owner
	next.Claims++
	next.LeaseExpiresAt = now.Add(lease)
	next.UpdatedAt = now
	next.Result = nil
	next.TakenOver = cur.State == StateRunning
	if next.TakenOver {
		next.Takeovers++
		return next, TakenOver, true
	}
	return next, Fresh, true
}

// decideResume applies Resume to an existing record: a running record of
// owner's, expired or not, is owner's again with its lease extended;
// anything else is decided as Begin decides it.
func decideResume(cur Record, owner string, lease time.Duration, now time.Time) (next Record, o Outcome, write bool) {
	if cur.State == StateRunning && cur.Owner == owner {
		return renewed(cur, lease, now), Resumed, true
	}
	return decide(cur, owner, lease, now)
}

// storedOver is Store applied to cur, the existing record or nil; write
// reports whether next must be stored, false when cur already holds a
// result.
func storedOver(cur *Record, key, owner string, r Result, now time.Time) (next Record, write bool) {
	if cur == nil {
		return Record{Key: key, State: StateDone, Owner: owner, CreatedAt: now, UpdatedAt: now, Result: &r}, true
	}
	if cur.State == StateDone {
		return *cur, false
	}
	next = *cur
	next.State = StateDone
	next.PreviousOwner = cur.Owner
	next.Owner = owner
	next.LeaseExpiresAt = time.Time{}
	next.UpdatedAt = now
	next.Result = &r
	return next, true
}

func renewed(cur Record, lease time.Duration, now time.Time) Record {
	cur.LeaseExpiresAt = now.Add(lease)
	cur.UpdatedAt = now
	return cur
}

func finished(cur Record, r Result, now time.Time) Record {
	cur.State = StateDone
	cur.LeaseExpiresAt = time.Time{}
	cur.UpdatedAt = now
	cur.Result = &r
	return cur
}

func released(cur Record, now time.Time) Record {
	cur.State = StateReleased
	cur.LeaseExpiresAt = time.Time{}
	cur.UpdatedAt = now
	return cur
}
