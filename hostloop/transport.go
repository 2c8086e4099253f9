package hostloop

import (
	"context"

	"github.com/splashfabric/splashfabric/protocol"
)

// Transport is how the Loop reaches workers. Implementations (the NATS one
// lives in package hostnats) must not block the loop: Publish and Cancel queue
// the send and report a failure later as an Event, and every completion
// arrives on Events, never as a call into a Runtime.
type Transport interface {
	// Publish sends one attempt of a claimed operation. A send that fails
	// after Publish returned comes back as EventPublishFailed.
	Publish(ctx context.Context, inv protocol.Invoke) error
	// Cancel asks whichever worker holds the call to stop.
	Cancel(ctx context.Context, c protocol.Cancel) error
	// Events delivers verified worker frames and send failures. The channel
	// is closed when the transport is closed.
	Events() <-chan Event
}

// StreamDenier is implemented by transports that can tell the worker
// running an attempt that the host refused one of its chunks, so it stops
// streaming (backpressure it can act on). The loop tells it once per
// attempt.
type StreamDenier interface {
	DenyStream(ctx context.Context, d protocol.StreamDenied) error
}

// EventKind tells what an Event carries.
type EventKind int

// Event kinds.
const (
	// EventMessage carries an authenticated worker frame: a result, a
	// chunk or a cancel disposition.
	EventMessage EventKind = iota + 1
	// EventPublishFailed reports that an invocation never reached the
	// stream; the loop may publish it again (the message id makes that
	// safe).
	EventPublishFailed
)

// Event is one input from the transport to the loop.
type Event struct {
	Kind EventKind
	// Message is set for EventMessage; it has passed the transport's
	// authentication, so only its fields remain to be checked against
	// the operation it names.
	Message protocol.WorkerMessage
	// Worker identifies the sender, for status and metrics.
	Worker string
	// Tool is the tool whose pool's key authenticated Message, when the
	// transport keeps a key per pool; empty when one key serves every
	// tool. The loop refuses a message for an operation of another tool,
	// so a pool cannot answer for a tool it does not serve with its own
	// key.
	Tool string
	// Invoke and Err are set for EventPublishFailed.
	Invoke protocol.Invoke
	Err    error
	// Ack, if set, tells the transport the event was taken for good, so
	// it is not delivered again. The loop calls it once, when what the
	// event changed is stored (a durable session's ledger entry), so an
	// answer a host took but did not store reaches the host's next
	// process. Nil: the transport already acknowledged it.
	Ack func()
}

// Reconciler is implemented by transports that can ask a tool's workers
// what became of an operation the host dispatched and holds no answer for
// (after adopting a session, say). The operation is named by its session
// and durable key, never by the host's own id for it. The answer is
// authenticated and bound to the request before it is returned; what the
// host then does with it is DecideReconcile's to say.
type Reconciler interface {
	Reconcile(ctx context.Context, sessionID, tool, operationKey string) (protocol.OperationReconcileResult, error)
}
