package hostloop

import (
	"context"

	"github.com/splashfabric/splashfabric/protocol"
)

// Transport is how the Loop reaches workers. Implementations (the NATS one
// lives in package hostnats; MemTransport is an in-memory pool for tests
// and examples) must not block the loop: Publish and Cancel queue the send
// and report a failure later as an Event, and every completion arrives on
// Events, never as a call into a Runtime. The loop uses all of it; each
// method's contract is what its loop-facing counterpart says below.
type Transport interface {
	// Publish sends one attempt of a claimed operation. A send that fails
	// after Publish returned comes back as EventPublishFailed.
	Publish(ctx context.Context, inv protocol.Invoke) error
	// PublishFor is Publish for an operation of a session adopted from
	// host hostID: its answers go to that host's events, where every
	// driver of the session reads.
	PublishFor(ctx context.Context, hostID string, inv protocol.Invoke) error
	// Cancel asks whichever worker holds the call to stop.
	Cancel(ctx context.Context, c protocol.Cancel) error
	// DenyStream tells the worker running an attempt that the host
	// refused one of its chunks, so it stops streaming (backpressure it
	// can act on). The loop tells it once per attempt.
	DenyStream(ctx context.Context, d protocol.StreamDenied) error
	// Events delivers verified worker frames and send failures. The
	// channel is closed when the transport is closed.
	Events() <-chan Event
	// AdoptEvents makes Events carry the answers sent to host hostID
	// too (its sessions were adopted here); ReleaseEvents stops that.
	AdoptEvents(ctx context.Context, hostID string) error
	ReleaseEvents(ctx context.Context, hostID string) error
	// Forget releases what the transport keeps of a request (a replay
	// window) once its operation settled.
	Forget(requestID string)
	// Waiting reports which of the published requests no worker has
	// been handed yet: such an operation is queued, not silent, and its
	// reconciliation waits. A request it cannot tell of is not in the
	// map.
	Waiting(ctx context.Context, requestIDs []string) (map[string]bool, error)
	// Reconcile asks a tool's workers what became of an operation the
	// host dispatched and holds no answer for. The operation is named by
	// its session and durable key, never by the host's own id for it.
	// The answer is authenticated and bound to the request before it is
	// returned; what the host then does with it is DecideReconcile's to
	// say.
	Reconcile(ctx context.Context, sessionID, tool, operationKey string) (protocol.OperationReconcileResult, error)
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
