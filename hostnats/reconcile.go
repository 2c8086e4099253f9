package hostnats

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/hostloop"
	"github.com/splashfabric/splashfabric/protocol"

	"github.com/splashfabric/splashfabric/internal/clip"
)

// reconcileReplyBuffer is how many answers to one request may wait to be
// checked; one is expected.
const reconcileReplyBuffer = 8

// DefaultReconcileTimeout is how long Reconcile waits for an answer when
// WithReconcileTimeout does not say.
const DefaultReconcileTimeout = 5 * time.Second

// WithReconcileTimeout sets how long Reconcile waits for an acceptable
// answer (default DefaultReconcileTimeout).
func WithReconcileTimeout(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return fmt.Errorf("%w: reconcile timeout %v", fabric.ErrInvalidConfig, d)
		}
		o.reconcileTimeout = d
		return nil
	}
}

// Reconcile asks the pool of tool what became of the operation of
// sessionID keyed operationKey: a fresh request, sealed as every host
// frame is, goes by request/reply to fabric.ReconcileSubject(tool), where one
// worker of the pool answers from its journal.
//
// Only an answer that authenticates as a worker's and is bound to this
// very request (its id, session, tool and operation key) is returned. A
// refused answer does not end the wait, so a forgery that races the real
// answer cannot suppress it; if no acceptable answer came before the
// timeout, the error wraps ErrNoReconcileAnswer together with the first
// refusal, if any: fabric.ErrForged (with the protocol sentinel that says why),
// ErrReconcileReplayed or ErrReconcileMismatch. A pool with no worker
// listening is ErrNoReconcileAnswer at once. Each refusal is also counted
// in Rejected and reported to WithRejectHandler.
func (t *HostTransport) Reconcile(ctx context.Context, sessionID, tool, operationKey string) (protocol.OperationReconcileResult, error) {
	if !t.enter() {
		return protocol.OperationReconcileResult{}, ErrClosed
	}
	defer t.active.Done()
	req, err := fabric.NewReconcileRequest(sessionID, tool, operationKey)
	if err != nil {
		return protocol.OperationReconcileResult{}, err
	}
	return t.reconcile(ctx, req)
}

func (t *HostTransport) reconcile(ctx context.Context, req protocol.OperationReconcileRequest) (protocol.OperationReconcileResult, error) {
	codec := t.pools.ForTool(req.Tool)
	m, err := codec.SealReconcile(req)
	if err != nil {
		return protocol.OperationReconcileResult{}, err
	}
	wctx, cancel := context.WithTimeout(ctx, t.opts.reconcileTimeout)
	defer cancel()
	// An inbox of its own rather than the connection's shared one: a
	// refused answer must leave the request open for the real one. On a
	// small channel, a flood of forgeries is dropped as a slow consumer's
	// excess, and the wait goes on until the timeout.
	inbox := t.nc.NewInbox()
	replies := make(chan *nats.Msg, reconcileReplyBuffer)
	sub, err := t.nc.ChanSubscribe(inbox, replies)
	if err != nil {
		return protocol.OperationReconcileResult{}, fmt.Errorf("hostnats: reconcile inbox: %w", err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	subject := fabric.ReconcileSubject(req.Tool)
	m.Subject, m.Reply = subject, inbox
	m.Header.Set(fabric.HeaderHost, eventsHost(req.SessionID, t.hostID))
	if err := t.nc.PublishMsg(m); err != nil {
		return protocol.OperationReconcileResult{}, fmt.Errorf("hostnats: reconcile %q: %w", clip.String(req.OperationKey, clip.Echo), err)
	}
	var refused error
	for {
		var reply *nats.Msg
		select {
		case reply = <-replies:
		case <-wctx.Done():
			return protocol.OperationReconcileResult{}, noAnswer(ctx, t.opts.reconcileTimeout, req, refused)
		case <-t.done:
			// Close must not wait out a reconciliation in flight.
			return protocol.OperationReconcileResult{}, ErrClosed
		}
		if noResponders(reply) {
			return protocol.OperationReconcileResult{}, fmt.Errorf("%w: no worker listens on %s", ErrNoReconcileAnswer, subject)
		}
		res, err := acceptReconciled(codec, reply, req)
		if err == nil {
			return res, nil
		}
		t.reject(reconcileRejectReason(err), subject, err)
		if refused == nil {
			refused = err
		}
	}
}

// acceptReconciled opens an answer under codec, the ring of the tool's
// pool, and checks it is bound to req.
func acceptReconciled(codec *fabric.Codec, reply *nats.Msg, req protocol.OperationReconcileRequest) (protocol.OperationReconcileResult, error) {
	res, err := codec.OpenReconciled(reply.Header, reply.Data)
	if err != nil {
		return protocol.OperationReconcileResult{}, err
	}
	if res.RequestID != req.RequestID {
		return protocol.OperationReconcileResult{}, fmt.Errorf("%w: answer to request %q, asked %q", ErrReconcileReplayed, clip.String(res.RequestID, clip.Echo), req.RequestID)
	}
	if err := res.Answers(req); err != nil {
		return protocol.OperationReconcileResult{}, fmt.Errorf("%w: %w", ErrReconcileMismatch, err)
	}
	return res, nil
}

// noAnswer is the error of a wait that ended without an acceptable
// answer: ErrNoReconcileAnswer, the caller's context error if that ended
// it, and the first refusal if there was one.
func noAnswer(ctx context.Context, timeout time.Duration, req protocol.OperationReconcileRequest, refused error) error {
	err := fmt.Errorf("%w for %q: none within %v", ErrNoReconcileAnswer, clip.String(req.OperationKey, clip.Echo), timeout)
	if cerr := ctx.Err(); cerr != nil {
		err = fmt.Errorf("%w for %q: %w", ErrNoReconcileAnswer, clip.String(req.OperationKey, clip.Echo), cerr)
	}
	if refused != nil {
		return fmt.Errorf("%w; refused: %w", err, refused)
	}
	return err
}

// noResponders reports the server's status message for a request nobody
// subscribed to.
func noResponders(m *nats.Msg) bool {
	return len(m.Data) == 0 && m.Header.Get("Status") == "503"
}

// reconcileRejectReason names a refused answer as Rejected counts it.
func reconcileRejectReason(err error) string {
	switch {
	case errors.Is(err, ErrReconcileReplayed):
		return RejectReplayed
	case errors.Is(err, ErrReconcileMismatch):
		return RejectInvalid
	}
	return classify(err)
}

// eventsHost is the host whose events take the answers of sessionID's
// operations: the host that accepted the session, whichever host drives
// it now (an adopting host publishes for it, see PublishFor). A worker
// looks an Idempotent call's stored answer up under it when reconciling.
func eventsHost(sessionID, self string) string {
	if _, host, ok := hostloop.ParseSessionID(hostloop.SessionID(sessionID)); ok {
		return host
	}
	return self
}
