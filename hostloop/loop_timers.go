package hostloop

import (
	"container/heap"
	"time"
)

type timerKind uint8

const (
	// timerDeadline fires at a session's earliest operation deadline.
	timerDeadline timerKind = iota + 1
	// timerPublish fires when a scheduled retry or republish is due.
	timerPublish
	// timerPump resumes a session whose local tools kept starting more
	// local tools for longer than one step may run them.
	timerPump
	// timerLedger tries a session's failed ledger write again.
	timerLedger
	// timerReconcile asks the workers about an operation that has no
	// answer yet.
	timerReconcile
	// timerLifetime ends a session that outlived its MaxLifetime.
	timerLifetime
	// timerForce asserts cancelled what an ending session's workers did
	// not acknowledge within LifetimeGrace.
	timerForce
)

// timerEntry is one pending wake-up. Entries are never removed early: a
// stale one is recognised and skipped when it fires, which keeps every
// change O(log n).
type timerEntry struct {
	at      time.Time
	kind    timerKind
	s       *session
	d       *dispatched
	attempt uint32
}

type timerHeap struct{ h entries }

type entries []timerEntry

func (e entries) Len() int           { return len(e) }
func (e entries) Less(i, j int) bool { return e[i].at.Before(e[j].at) }
func (e entries) Swap(i, j int)      { e[i], e[j] = e[j], e[i] }
func (e *entries) Push(x any)        { *e = append(*e, x.(timerEntry)) }
func (e *entries) Pop() any {
	old := *e
	n := len(old)
	x := old[n-1]
	old[n-1] = timerEntry{}
	*e = old[:n-1]
	return x
}

func (t *timerHeap) push(e timerEntry) { heap.Push(&t.h, e) }

func (t *timerHeap) peek() (time.Time, bool) {
	if len(t.h) == 0 {
		return time.Time{}, false
	}
	return t.h[0].at, true
}

// popDue removes and returns the earliest entry if it is due at now.
func (t *timerHeap) popDue(now time.Time) (timerEntry, bool) {
	if len(t.h) == 0 || t.h[0].at.After(now) {
		return timerEntry{}, false
	}
	return heap.Pop(&t.h).(timerEntry), true
}
