package hostloop

import (
	"context"
	"sync"
	"time"

	"github.com/splashfabric/splashfabric/protocol"
)

// MemTransport is an in-memory Transport for tests and examples of a Loop
// without NATS: the caller plays the worker pool, reading what the loop
// publishes and sending what workers would answer. Its pool holds every
// call it was handed until the caller answers it: asked, it says each is
// running (OnReconcile answers otherwise) and none is queued. It is safe
// for concurrent use.
type MemTransport struct {
	// OnPublish, if set before the loop starts, is called with every
	// invocation on the loop's goroutine, where a test may look at the
	// loop at the moment it publishes.
	OnPublish func(protocol.Invoke)
	// OnCancel, if set before the loop starts, is called with every
	// cancellation, on the loop's goroutine; a fake pool reacts to it.
	OnCancel func(protocol.Cancel)
	// OnReconcile, if set before the loop starts, is what the pool's
	// workers answer when the loop asks about an operation; called off
	// the loop's goroutine.
	OnReconcile func(sessionID, tool, operationKey string) (protocol.OperationStatus, error)

	pub    chan protocol.Invoke
	events chan Event

	mu        sync.Mutex
	published []protocol.Invoke
	cancels   []protocol.Cancel
	denials   []protocol.StreamDenied
	adopted   map[string]bool
}

var _ Transport = (*MemTransport)(nil)

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

// PublishFor is Publish: one pool answers every host here.
func (t *MemTransport) PublishFor(ctx context.Context, _ string, inv protocol.Invoke) error {
	return t.Publish(ctx, inv)
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

// AdoptEvents records that the loop reads hostID's answers too.
func (t *MemTransport) AdoptEvents(_ context.Context, hostID string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.adopted == nil {
		t.adopted = map[string]bool{}
	}
	t.adopted[hostID] = true
	return nil
}

// ReleaseEvents undoes AdoptEvents.
func (t *MemTransport) ReleaseEvents(_ context.Context, hostID string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.adopted, hostID)
	return nil
}

// Adopted reports whether the loop reads hostID's answers.
func (t *MemTransport) Adopted(hostID string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.adopted[hostID]
}

// Forget keeps nothing per request: there is nothing to release.
func (t *MemTransport) Forget(string) {}

// Waiting says no call is queued: the pool holds every one at once.
func (t *MemTransport) Waiting(context.Context, []string) (map[string]bool, error) {
	return nil, nil
}

// Reconcile answers as OnReconcile says, or that the operation runs.
func (t *MemTransport) Reconcile(_ context.Context, sessionID, tool, operationKey string) (protocol.OperationReconcileResult, error) {
	st := protocol.StatusRunning()
	if t.OnReconcile != nil {
		var err error
		if st, err = t.OnReconcile(sessionID, tool, operationKey); err != nil {
			return protocol.OperationReconcileResult{}, err
		}
	}
	return protocol.OperationReconcileResult{SessionID: sessionID, Tool: tool, OperationKey: operationKey, Status: st}, nil
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
