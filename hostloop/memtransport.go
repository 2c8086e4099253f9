package hostloop

import (
	"context"
	"sync"
	"time"

	"github.com/splashfabric/splashfabric/protocol"
)

// MemTransport is an in-memory Transport (and StreamDenier) for tests and
// examples of a Loop without NATS: the caller plays the worker pool,
// reading what the loop publishes and sending what workers would answer.
// It is safe for concurrent use.
type MemTransport struct {
	// OnPublish, if set before the loop starts, is called with every
	// invocation on the loop's goroutine, where a test may look at the
	// loop at the moment it publishes.
	OnPublish func(protocol.Invoke)
	// OnCancel, if set before the loop starts, is called with every
	// cancellation, on the loop's goroutine; a fake pool reacts to it.
	OnCancel func(protocol.Cancel)

	pub    chan protocol.Invoke
	events chan Event

	mu        sync.Mutex
	published []protocol.Invoke
	cancels   []protocol.Cancel
	denials   []protocol.StreamDenied
}

var (
	_ Transport    = (*MemTransport)(nil)
	_ StreamDenier = (*MemTransport)(nil)
)

// NewMemTransport returns a transport that buffers n invocations and n
// events.
func NewMemTransport(n int) *MemTransport {
	return &MemTransport{pub: make(chan protocol.Invoke, n), events: make(chan Event, n)}
}

// Publish records inv and offers it on Invocations.
func (t *MemTransport) Publish(_ context.Context, inv protocol.Invoke) error {
	if t.OnPublish != nil {
		t.OnPublish(inv)
	}
	t.mu.Lock()
	t.published = append(t.published, inv)
	t.mu.Unlock()
	select {
	case t.pub <- inv:
	default:
		// Nobody reads them; Published still has it.
	}
	return nil
}

// Cancel records c.
func (t *MemTransport) Cancel(_ context.Context, c protocol.Cancel) error {
	if t.OnCancel != nil {
		t.OnCancel(c)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cancels = append(t.cancels, c)
	return nil
}

// DenyStream records d.
func (t *MemTransport) DenyStream(_ context.Context, d protocol.StreamDenied) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.denials = append(t.denials, d)
	return nil
}

// Events is what the loop reads.
func (t *MemTransport) Events() <-chan Event { return t.events }

// Invocations delivers each published invocation once.
func (t *MemTransport) Invocations() <-chan protocol.Invoke { return t.pub }

// Next waits up to timeout for the next published invocation.
func (t *MemTransport) Next(timeout time.Duration) (protocol.Invoke, bool) {
	select {
	case inv := <-t.pub:
		return inv, true
	case <-time.After(timeout):
		return protocol.Invoke{}, false
	}
}

// EventsIn is the sending side of Events, for a fake pool that must not
// block on a full buffer while it is being stopped.
func (t *MemTransport) EventsIn() chan<- Event { return t.events }

// Send hands the loop ev: a worker's frame, or a failed publish.
func (t *MemTransport) Send(ev Event) { t.events <- ev }

// Message sends m as the frame of worker "w1".
func (t *MemTransport) Message(m protocol.WorkerMessage) {
	t.Send(Event{Kind: EventMessage, Message: m, Worker: "w1"})
}

// Reply sends r as worker w1's answer.
func (t *MemTransport) Reply(r protocol.Result) { t.Message(protocol.ResultMessage(r)) }

// Succeed answers inv with text.
func (t *MemTransport) Succeed(inv protocol.Invoke, text string) {
	p := protocol.TextPayload(text)
	t.Reply(protocol.Result{RequestID: inv.RequestID, Attempt: inv.Attempt, Status: protocol.ResultSucceeded, Payload: &p})
}

// Published returns every invocation published so far.
func (t *MemTransport) Published() []protocol.Invoke {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]protocol.Invoke(nil), t.published...)
}

// Cancels returns every cancellation sent so far.
func (t *MemTransport) Cancels() []protocol.Cancel {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]protocol.Cancel(nil), t.cancels...)
}

// Denials returns every stream denial sent so far.
func (t *MemTransport) Denials() []protocol.StreamDenied {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]protocol.StreamDenied(nil), t.denials...)
}
