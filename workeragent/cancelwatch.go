package workeragent

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/protocol"
)

// cancelSet is the agent's local copy of the cancel records, fed by a
// watcher on the cancel bucket and by the cancel broadcasts, so a pickup
// consults memory instead of reading the bucket: a read per call was the
// largest cost of the hot path after the journal's writes.
//
// The copy can lag the bucket. It is trusted only while it is current:
// the watcher has delivered every record stored when it started, and the
// connection has not reconnected since (a reconnect may have lost
// broadcasts and stalled the watcher). Otherwise a pickup reads the
// bucket as before. See docs/topology.md for the race this leaves.
type cancelSet struct {
	mu sync.Mutex
	// notes maps fabric.CancelKey(request id) to the cancellation with
	// the highest attempt heard for that request.
	notes map[string]cancelNote
	// current: the watcher started at reconnect count epoch has
	// delivered its initial values.
	current bool
	epoch   uint64
	// horizon is how long a note is kept (the bucket's TTL); lastSweep
	// paces the pruning.
	horizon   time.Duration
	lastSweep time.Time
}

type cancelNote struct {
	c  protocol.Cancel
	at time.Time
}

func newCancelSet(horizon time.Duration) *cancelSet {
	return &cancelSet{notes: make(map[string]cancelNote), horizon: horizon}
}

// note records c; a note for a later attempt covers more, so it wins.
func (s *cancelSet) note(c protocol.Cancel, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := fabric.CancelKey(c.RequestID)
	if old, ok := s.notes[k]; !ok || old.c.Attempt <= c.Attempt {
		s.notes[k] = cancelNote{c: c, at: at}
	}
	if now := time.Now(); now.Sub(s.lastSweep) > s.horizon/64 {
		s.lastSweep = now
		for k, n := range s.notes {
			if now.Sub(n.at) > s.horizon {
				delete(s.notes, k)
			}
		}
	}
}

func (s *cancelSet) forget(key string) {
	s.mu.Lock()
	delete(s.notes, key)
	s.mu.Unlock()
}

// restart marks the copy stale until the watcher started at epoch is
// current; notes already held stay, they are still true.
func (s *cancelSet) restart(epoch uint64) {
	s.mu.Lock()
	s.current, s.epoch = false, epoch
	s.mu.Unlock()
}

func (s *cancelSet) caughtUp(epoch uint64) {
	s.mu.Lock()
	if s.epoch == epoch {
		s.current = true
	}
	s.mu.Unlock()
}

// covers reports whether a note covers inv, and whether the answer is
// authoritative: a covering note always is, a miss only while the copy is
// current at reconnect count epoch.
func (s *cancelSet) covers(inv protocol.Invoke, epoch uint64) (covered, sure bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n, ok := s.notes[fabric.CancelKey(inv.RequestID)]; ok && fabric.Covers(n.c, inv) {
		return true, true
	}
	return false, s.current && s.epoch == epoch
}

// reconnects is the connection's reconnect count: a message delivered on a
// new connection is processed after the count went up.
func (a *Agent) reconnects() uint64 { return a.nc.Stats().Reconnects }

// startCancelWatch starts the watcher goroutine and waits until its initial
// values are in, so the first pickups already trust the copy.
func (a *Agent) startCancelWatch(ctx context.Context) error {
	wctx, stop := context.WithCancel(context.Background())
	a.stopWatch = stop
	status := a.nc.StatusChanged(nats.CONNECTED)
	epoch := a.reconnects()
	w, err := a.cancelKV.WatchAll(wctx)
	if err != nil {
		a.nc.RemoveStatusListener(status)
		return err
	}
	a.cancels.restart(epoch)
	synced := make(chan struct{})
	a.goTracked(func() {
		defer a.nc.RemoveStatusListener(status)
		a.watchCancels(wctx, w, epoch, status, synced)
	})
	select {
	case <-synced:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(opTimeout):
		// Pickups read the bucket until the watcher catches up.
		a.log.Warn("cancel watcher not current yet")
		return nil
	}
}

// watchCancels applies watcher updates until wctx ends, restarting the
// watcher after every reconnect.
func (a *Agent) watchCancels(wctx context.Context, w jetstream.KeyWatcher, epoch uint64, status chan nats.Status, synced chan struct{}) {
	first := synced
	for {
		if w != nil {
			if !a.applyCancelUpdates(wctx, w, epoch, status, &first) {
				_ = w.Stop()
				return
			}
			_ = w.Stop()
		}
		epoch = a.reconnects()
		a.cancels.restart(epoch)
		var err error
		if w, err = a.cancelKV.WatchAll(wctx); err != nil {
			w = nil
			a.log.Debug("cancel watcher restart", "err", err)
			// Try again at the next reconnect; pickups read the bucket
			// meanwhile.
			select {
			case <-wctx.Done():
				return
			case <-status:
			}
		}
	}
}

// applyCancelUpdates feeds the set from one watcher; it reports false when
// the agent stops and true when the watcher must be restarted.
func (a *Agent) applyCancelUpdates(wctx context.Context, w jetstream.KeyWatcher, epoch uint64, status chan nats.Status, first *chan struct{}) bool {
	for {
		select {
		case <-wctx.Done():
			return false
		case <-status:
			if a.reconnects() != epoch {
				return true
			}
		case e, ok := <-w.Updates():
			if !ok {
				return wctx.Err() == nil
			}
			if e == nil {
				a.cancels.caughtUp(epoch)
				if *first != nil {
					close(*first)
					*first = nil
				}
				continue
			}
			a.applyCancelEntry(e)
		}
	}
}

func (a *Agent) applyCancelEntry(e jetstream.KeyValueEntry) {
	if e.Operation() != jetstream.KeyValuePut {
		a.cancels.forget(e.Key())
		return
	}
	c, err := a.codec.OpenCancelRecord(e.Value())
	if err == nil && fabric.CancelKey(c.RequestID) != e.Key() {
		err = errors.New("cancel record stored under another request's key")
	}
	if err != nil {
		a.forged(err, "rejected cancel record", "key", e.Key())
		return
	}
	a.cancels.note(c, e.Created())
}
