package hostloop

import (
	"context"
	"fmt"
	"time"

	"github.com/splashfabric/splashfabric/workflow"

	"github.com/splashfabric/splashfabric/internal/clip"
)

// DefaultLifetimeGrace is how long the workers of a session that outlived
// its MaxLifetime have to acknowledge its cancellations before the host
// asserts them cancelled, when LoopConfig.LifetimeGrace is zero.
const DefaultLifetimeGrace = 30 * time.Second

// CancelSession ends a session before its script does: every live
// operation is cancelled two-phase (its worker acknowledges, or its result
// wins the race), the script sees the cancellations, nothing it starts
// from then on is dispatched, and the session ends cancelled
// (SessionCancelled) once no operation is live, releasing its slot and its
// ledger. With force, the host asserts every live operation cancelled at
// once without waiting for its worker (the reference's terminal
// assertion), each with its audit event; for a session stuck behind
// workers that cannot answer. The workers are told anyway once the outcome
// is stored, so a pool does not spend itself on calls nobody awaits.
// Asking again with force finishes what a two-phase cancel left.
func (l *Loop) CancelSession(ctx context.Context, id SessionID, force bool) (SessionStatus, error) {
	type answer struct {
		s   SessionStatus
		err error
	}
	a, err := call(ctx, l, func(reply chan<- answer) command {
		return cmdFunc(func(st *loopState) {
			end := func() {
				s, err := st.cancelSession(id, workflow.EndOperator, force)
				reply <- answer{s, err}
			}
			if s := st.sessions[id]; s != nil && st.later(s, end) {
				return
			}
			end()
		})
	})
	if err != nil {
		return SessionStatus{}, err
	}
	return a.s, a.err
}

// cancelSession ends s for reason; it runs on the loop goroutine.
func (st *loopState) cancelSession(id SessionID, reason workflow.EndReason, force bool) (SessionStatus, error) {
	s := st.sessions[id]
	switch {
	case s == nil:
		return SessionStatus{}, st.unknownSession(id)
	case s.done:
		return st.status(s), fmt.Errorf("%w: %s ended %s", ErrSessionEnded, clip.Quote(id, clip.Echo), summaryOf(s).State)
	}
	err := s.core.CancelSession(reason, force)
	for _, d := range s.ops {
		st.changedOp(d)
	}
	st.touch(s)
	// The status the caller gets is the one this step leaves.
	st.flushSession(s)
	return st.status(s), err
}

// endLifetime ends a session that outlived its MaxLifetime, and gives its
// workers LifetimeGrace to acknowledge before the rest is forced.
func (st *loopState) endLifetime(s *session) {
	if st.sessions[s.id] != s || s.done {
		return
	}
	if _, err := st.cancelSession(s.id, workflow.EndLifetime, false); err != nil {
		st.reject("max_lifetime", err)
	}
	st.timers.push(timerEntry{at: st.now.Add(st.cfg.LifetimeGrace), kind: timerForce, s: s})
}

// forceEnding asserts cancelled what an ending session still holds.
func (st *loopState) forceEnding(s *session) {
	if st.sessions[s.id] != s || s.done {
		return
	}
	if _, err := st.cancelSession(s.id, s.core.Ending(), true); err != nil {
		st.reject("max_lifetime", err)
	}
}

// ReconcileSession asks the tools' workers, now, about every live
// operation of a session, instead of when each one's reconciliation is
// next due; it returns how many it asks about. What they answer is taken
// as any reconciliation's is (see workflow.DecideReconcile).
func (l *Loop) ReconcileSession(ctx context.Context, id SessionID) (int, error) {
	type answer struct {
		n   int
		err error
	}
	a, err := call(ctx, l, func(reply chan<- answer) command {
		return cmdFunc(func(st *loopState) {
			s := st.sessions[id]
			if s == nil {
				reply <- answer{err: st.unknownSession(id)}
				return
			}
			for _, d := range s.ops {
				st.reconcileAfter(d, 0)
			}
			reply <- answer{n: len(s.ops)}
		})
	})
	if err != nil {
		return 0, err
	}
	return a.n, a.err
}
