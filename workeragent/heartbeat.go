package workeragent

import (
	"context"
	"errors"
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
		if err := h.renew(); errors.Is(err, idempotency.ErrLeaseLost) {
			// Someone else holds the key: the handler must stop
			// producing effects. Progress is still reported while it
			// winds down, so the message is not redelivered meanwhile.
			h.lost = true
			h.cancel(idempotency.ErrLeaseLost)
		}
	}
	h.timer.Reset(h.interval)
}

// renew extends the lease; called with mu held.
func (h *heartbeat) renew() error {
	e := h.e
	ctx, cancel := context.WithTimeout(context.Background(), h.interval)
	defer cancel()
	c, err := e.a.cfg.Journal.Renew(ctx, e.claim)
	if err != nil {
		e.a.log.Warn("lease renewal failed", "request", e.inv.RequestID, "err", err)
		return err
	}
	e.claim = c
	return nil
}

// stop ends the heartbeats and reports whether the lease was lost.
func (h *heartbeat) stop() (leaseLost bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stopped = true
	h.timer.Stop()
	return h.lost
}
