package hostloop

import (
	"fmt"
)

// The loop never waits for a script beyond one quantum (host.Turns): a
// session whose slice used its quantum, or could not start at once (the
// engine busy, or its realm held by a paused slice), is left running and
// continued when its turn comes on st.turns, between the loop's other
// steps. A running session takes no input (workflow.Session.Running):
// what would reach it (a worker's frame, a timer, an operator's cancel)
// waits in its deferred queue, in arrival order, and is taken once its
// slice ends.

// errLoopStopping ends the slices still running as the loop stops; the
// sessions themselves are recorded as any suspended session is (or
// resumed by the next process, durable ones).
var errLoopStopping = fmt.Errorf("%w while the script ran", ErrHostStopped)

// errRelinquished ends the slice of a session another host took.
var errRelinquished = fmt.Errorf("%w: another host took the session", ErrSessionEnded)

// later defers f while s runs, and reports whether it did.
func (st *loopState) later(s *session, f func()) bool {
	if !s.core.Running() {
		return false
	}
	s.deferred = append(s.deferred, f)
	return true
}

// takeTurns continues every session whose turn came, and takes what
// waited for those whose slice ended.
func (st *loopState) takeTurns() {
	for _, tag := range st.turns.Take() {
		s := tag.(*session)
		s.core.Continue()
		if st.sessions[s.id] != s {
			continue
		}
		st.touch(s)
		st.takeDeferred(s)
	}
}

// takeDeferred applies what waited for s's slice to end, in order, until
// one of them leaves it running again.
func (st *loopState) takeDeferred(s *session) {
	for len(s.deferred) > 0 && !s.core.Running() && st.sessions[s.id] == s {
		f := s.deferred[0]
		s.deferred[0] = nil
		s.deferred = s.deferred[1:]
		f()
	}
}

// stopRunning ends s's slice if one runs, failing its script with why:
// the session is leaving the loop, and a paused slice would hold its
// realm and its goroutine for ever.
func (st *loopState) stopRunning(s *session, why error) {
	if s.core.Running() {
		s.core.Abort(why)
		st.touch(s)
	}
}

// stopAllRunning ends every running slice as the loop stops.
func (st *loopState) stopAllRunning() {
	for _, s := range st.sessions {
		st.stopRunning(s, errLoopStopping)
	}
}
