package hostloop

import (
	"context"
	"fmt"
	"sync/atomic"
)

// A submission is the caller's only once Submit answers it. A caller whose
// context ends first (an HTTP client that timed out, say) is told that
// error, so what it submitted must then change nothing: the loop and the
// caller settle who came first with one compare-and-swap, and the loop
// withdraws a session whose caller left.
//
// A session without a ledger is answered in the step that takes it, so
// the swap is made before it is taken: either the caller gets its status,
// or the loop never holds it. A durable session is answered only once its
// ledger's first write is stored, which can take as long as the server
// does to answer (seconds, when a node fails over); until then none of
// its operations is dispatched, so one whose caller left is withdrawn
// then with nothing done.

// The states of a submitWait.
const (
	submitWaiting int32 = iota
	submitAnswered
	submitAbandoned
)

// submitWait is one Submit's handshake with the loop.
type submitWait struct {
	state atomic.Int32
	reply chan submitAnswer // buffered: the loop never waits on it
}

type submitAnswer struct {
	s   SessionStatus
	err error
}

// claim decides for the loop, unless the caller left first: the caller
// then waits for send.
func (w *submitWait) claim() bool { return w.state.CompareAndSwap(submitWaiting, submitAnswered) }

func (w *submitWait) send(s SessionStatus, err error) { w.reply <- submitAnswer{s, err} }

// answer hands the caller its answer, unless it left; it reports whether
// the caller takes it.
func (w *submitWait) answer(s SessionStatus, err error) bool {
	if !w.claim() {
		return false
	}
	w.send(s, err)
	return true
}

// abandoned reports whether the caller left.
func (w *submitWait) abandoned() bool { return w.state.Load() == submitAbandoned }

// wait returns the loop's answer, or ctx's error if ctx ends before the
// loop answered; an answer given first stands, and is what the caller
// gets.
func (w *submitWait) wait(ctx context.Context, done <-chan struct{}) (SessionStatus, error) {
	select {
	case a := <-w.reply:
		return a.s, a.err
	case <-done:
		return SessionStatus{}, ErrLoopStopped
	case <-ctx.Done():
	}
	if w.state.CompareAndSwap(submitWaiting, submitAbandoned) {
		return SessionStatus{}, ctx.Err()
	}
	// Answered meanwhile: the loop sends in the same step it swapped.
	select {
	case a := <-w.reply:
		return a.s, a.err
	case <-done:
		return SessionStatus{}, ErrLoopStopped
	}
}

// take makes the prepared session n the loop's and answers its submitter,
// at once or, for a durable session, when its ledger's first write is
// stored. A submitter that left before is not taken, or is withdrawn.
func (st *loopState) take(n newSession, w *submitWait) {
	if n.ledger == nil {
		if w.claim() {
			w.send(st.adopt(n))
		}
		return
	}
	if w.abandoned() {
		return
	}
	s, err := st.adopt(n)
	if err != nil {
		w.answer(s, err)
		return
	}
	sess := st.sessions[s.ID]
	// A durable session is the caller's once a later host could resume
	// it: its ledger's first write is stored.
	sess.onAccepted = func() {
		if !w.answer(st.status(sess), nil) {
			st.withdraw(sess)
		}
	}
	sess.submitter = w
}

// withdraw ends a durable session whose submitter left before its ledger
// was first stored. Every operation it claimed is still held (none is
// published before that write), so cancelling them is certain and no
// worker ever sees one; the session then ends failed with
// ErrSubmissionWithdrawn, and its ledger goes as a finished session's
// does. A session that ended already, that another host took, or one of
// whose operations was handed out after all, is left as it is.
func (st *loopState) withdraw(s *session) {
	if st.sessions[s.id] != s || s.done {
		return
	}
	why := fmt.Errorf("%w: its submitter left before its ledger was stored; nothing it started was dispatched", ErrSubmissionWithdrawn)
	st.stopRunning(s, why)
	if s.core.Withdraw(why) != nil {
		// Out already (it cannot be, before the first write): the
		// session goes on as if its caller had been answered.
		return
	}
	s.withdrawn = true
	st.touch(s)
	st.takeResult(s)
	st.finishSession(s)
}
