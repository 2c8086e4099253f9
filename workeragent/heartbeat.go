package workeragent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/splashfabric/splashfabric/idempotency"
)

// heartbeat keeps a call alive while its handler runs on the execution's
// goroutine: every HeartbeatInterval it tells the stream the call is in
// progress (so the ack wait does not pass) and, for a claimed call,
// renews the lease. It is a timer rather than a goroutine with a ticker,
// so a call that ends within one interval, as nearly all do, costs one
// timer and nothing else.
//
// The timer's callback runs on a goroutine the runtime starts, the one
// goroutine of the agent outside goTracked. It does work only before stop,
// while its execution (which holds a goTracked slot) is still running,
// and stop waits for a callback in progress by taking mu; a callback that
// fires after stop only reads stopped and returns.
type heartbeat struct {
	e        *execution
	cancel   context.CancelCauseFunc // the handler's context
	interval time.Duration

	// mu is held for a whole beat, renewal included, so stop returns
	// only after the last beat and e.claim is the execution's again. It
	// is taken after nothing else and nothing is taken while it is held
	// except what the journal and the client take inside.
	mu      sync.Mutex
	timer   *time.Timer // guarded by mu
	stopped bool        // guarded by mu
	lost    bool        // guarded by mu; a renewal found the lease lost
	// unsure: the last renewal went unanswered, so it may have landed
	// and left e.claim a revision behind; guarded by mu. The next
	// renewal resumes the claim under its owner id instead, which finds
	// the record wherever this claim's own writes took it.
	unsure bool
}

func (e *execution) startHeartbeat(cancel context.CancelCauseFunc) *heartbeat {
	h := &heartbeat{e: e, cancel: cancel, interval: e.a.cfg.HeartbeatInterval}
	h.mu.Lock()
	h.timer = time.AfterFunc(h.interval, h.beat)
	h.mu.Unlock()
	return h
}

func (h *heartbeat) beat() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped {
		return
	}
	e := h.e
	_ = e.msg.InProgress()
	if e.claim.Held() && !h.lost {
		h.renew()
	}
	h.timer.Reset(h.interval)
}

// renew extends the lease; called with mu held. A renewal that finds the
// lease lost cancels the handler: someone else holds the key, so the
// handler must stop producing effects. Progress is still reported while
// it winds down, so the message is not redelivered meanwhile.
func (h *heartbeat) renew() {
	e := h.e
	ctx, cancel := context.WithTimeout(context.Background(), h.interval)
	defer cancel()
	var c idempotency.Claim
	var err error
	if h.unsure {
		c, err = h.resume(ctx)
	} else {
		c, err = e.a.cfg.Journal.Renew(ctx, e.claim)
	}
	switch {
	case err == nil:
		h.unsure = false
		e.claim = c
	case errors.Is(err, idempotency.ErrLeaseLost):
		e.a.log.Warn("lease lost", "request", e.inv.RequestID, "err", err)
		h.lost = true
		h.cancel(idempotency.ErrLeaseLost)
	default:
		e.a.log.Warn("lease renewal failed", "request", e.inv.RequestID, "err", err)
		h.unsure = true
	}
}

// resume renews a claim whose last renewal went unanswered, from the
// record this execution's writes left, whichever of them landed. A claim
// that ended meanwhile cannot have: the handler is still running, so
// someone else ended it, and the lease is lost.
func (h *heartbeat) resume(ctx context.Context) (idempotency.Claim, error) {
	c, ended, err := h.e.resumeOwn(ctx)
	if err == nil && ended {
		err = fmt.Errorf("%w: %q ended under this claim while it ran", idempotency.ErrLeaseLost, h.e.inv.IdempotencyKey)
	}
	return c, err
}

// stop ends the heartbeats and reports whether the lease was lost. A
// claim left unsure by the last renewal is resumed first, so the Finish
// or Release that follows writes over the record as it stands.
func (h *heartbeat) stop() (leaseLost bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stopped = true
	h.timer.Stop()
	if h.unsure && !h.lost && h.e.claim.Held() {
		h.renew()
	}
	return h.lost
}
