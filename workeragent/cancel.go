package workeragent

import (
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/protocol"
)

// onCancel runs on the cancel subscription's callback goroutine. Every agent
// of the pool hears every request for its tools; only one holding the named
// attempt acts on it. The request is also noted in the local copy of the
// cancel records, so a call not yet at its handler is caught when it gets
// there (an execution registers before it consults the copy, so one of the
// two always sees the request); a running one is cancelled, or answered
// unsupported if its tool is not cancellable (and, for a process tool,
// stopped if it runs on past its cancel grace); a finished one has its
// result on the way.
func (a *Agent) onCancel(t *tool, m *nats.Msg) {
	msg, err := a.codec.OpenControl(m.Header, m.Data)
	if err == nil && msg.Kind == protocol.KindStreamDenied {
		a.onStreamDenied(t, *msg.Denied)
		return
	}
	var c protocol.Cancel
	if err == nil {
		c = *msg.Cancel
	}
	if err == nil && c.Tool != t.name {
		err = fmt.Errorf("%w: cancel for tool %q on the subject of %q", errWrongSubject, c.Tool, t.name)
	}
	if err != nil {
		a.forged(err, "rejected cancel request", "tool", t.name)
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	// Noted under a.mu: a pickup registers under a.mu before it consults
	// the set, so it either sees this note or is found below.
	a.cancels.note(fabric.CancelKey(t.spec.pool, c.RequestID), c, time.Now())
	for e := range a.running {
		if fabric.Covers(c, e.inv) {
			a.cancelLocked(e, c)
		}
	}
}

// onStreamDenied tells the running attempt the host refused a chunk of:
// its writer fails every later chunk, and the handler learns at its next
// Write.
func (a *Agent) onStreamDenied(t *tool, d protocol.StreamDenied) {
	if d.Tool != t.name {
		a.forged(fmt.Errorf("%w: stream denial for tool %q on the subject of %q", errWrongSubject, d.Tool, t.name), "rejected stream denial", "tool", t.name)
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for e := range a.running {
		if e.inv.RequestID == d.RequestID && e.inv.Attempt == d.Attempt && e.writer != nil {
			e.writer.deny(d.Reason)
		}
	}
}

// cancelLocked applies one cancellation request to e; a.mu is held.
func (a *Agent) cancelLocked(e *execution, c protocol.Cancel) {
	a.stats.cancelRequests.Add(1)
	e.span.AddEvent("cancellation requested")
	switch {
	case !e.started:
		e.cancelAsked = true
	case e.t.spec.cancellable:
		e.cancelAsked = true
		e.cancel(ErrCancelRequested)
	case !e.unsupportedSent:
		a.sendUnsupportedLocked(e)
		if e.t.sup != nil {
			// A process can be stopped where a Go handler cannot: its
			// handler learns of the request and gives the call its
			// cancel grace, sending the tool nothing.
			e.cancel(ErrCancelRequested)
		}
	}
}

// sendUnsupportedLocked answers a cancellation request unsupported: the
// call runs on and its result still comes. The disposition takes the
// attempt's next frame number, so it sorts before the result; it is
// started while e is in a.running, so teardown cannot be waiting on the
// WaitGroup yet. a.mu is held.
func (a *Agent) sendUnsupportedLocked(e *execution) bool {
	e.unsupportedSent = true
	k, ok := e.writer.reserve()
	if !ok {
		return false
	}
	reply := protocol.CancelReplyMessage(protocol.CancelReply{
		RequestID: e.inv.RequestID, Attempt: e.inv.Attempt, Disposition: protocol.CancelUnsupported,
	})
	a.goTracked(func() {
		if err := a.publishEvent(e, reply, k); err != nil {
			a.stats.publishErrors.Add(1)
			a.log.Warn("publish unsupported disposition failed", "request", e.inv.RequestID, "err", err)
		}
	})
	return true
}
