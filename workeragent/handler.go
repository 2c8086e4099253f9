package workeragent

import (
	"context"
	"time"

	"github.com/splashfabric/splashfabric/protocol"
)

// Handler runs one attempt of a tool call.
//
// The context is cancelled when the host asks to cancel the call (cause
// ErrCancelRequested, only for tools declared cancellable), when the
// call's deadline passes (cause ErrDeadlineElapsed) or when the agent is
// shutting down and the grace period is over (cause ErrDraining); read
// the cause with context.Cause.
//
// The handler answers with its return values: a nil error sends the Output
// as a successful result; Retryable, RateLimited and Permanent send
// failures; CancelAcknowledged acknowledges a cancellation request. Any
// other error is reported as a transient failure, except during a drain,
// when the call is handed back for redelivery.
type Handler interface {
	HandleCall(ctx context.Context, call *Call) (Output, error)
}

// HandlerFunc adapts a function to a Handler.
type HandlerFunc func(ctx context.Context, call *Call) (Output, error)

// HandleCall calls f.
func (f HandlerFunc) HandleCall(ctx context.Context, call *Call) (Output, error) { return f(ctx, call) }

// Call is what a handler knows about the attempt it runs. It is built by the
// agent and read by the handler; only Stream may be used from several
// goroutines.
type Call struct {
	// Tool is the registered tool name.
	Tool string
	// RequestID is the host's identifier of the operation.
	RequestID string
	// IdempotencyKey is stable across all attempts of the operation; pass
	// it to downstream systems that deduplicate.
	IdempotencyKey string
	// Input is the validated input.
	Input protocol.WorkerPayload
	// CallIndex orders the call among its script's calls.
	CallIndex uint64
	// Attempt counts from 1; AttemptLimit is the most the host will make.
	Attempt      uint32
	AttemptLimit uint32
	// Deadline is when the host will stop waiting; zero means none. The
	// handler's context carries it too.
	Deadline time.Time
	// OutputLimit bounds the terminal result in bytes (zero: no bound
	// known to the worker).
	OutputLimit int
	// TakenOver reports that an earlier delivery of this attempt ended
	// without a result, its holder having crashed or stalled past the ack
	// wait (or been handed back in a drain): its effect may have happened.
	// Only tools declared idempotent are run in that case; for the
	// others the agent answers indeterminate instead.
	TakenOver bool
	// Stream sends progress chunks to the host. It is never nil; for a
	// tool without a stream policy every Write fails with
	// ErrStreamNotAllowed.
	Stream *ChunkWriter

	e *execution // the agent's side of the call
}

// CancelUnsupported tells the host that this call cannot be stopped after
// all: a cancellable tool's handler whose context was cancelled with
// ErrCancelRequested, and which finds it cannot honour the request, calls
// it and runs on; the host keeps the call pending until its result or
// deadline. It sends the disposition at most once, and only while a
// cancellation request is pending; it reports whether it sent it.
func (c *Call) CancelUnsupported() bool {
	e := c.e
	if e == nil {
		return false
	}
	a := e.a
	a.mu.Lock()
	defer a.mu.Unlock()
	if !e.cancelAsked || e.unsupportedSent {
		return false
	}
	return a.sendUnsupportedLocked(e)
}
