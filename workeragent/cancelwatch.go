package workeragent

import (
	"context"
	"errors"
	"reflect"
	"slices"
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
	// notes maps fabric.CancelKey(pool, request id) to the cancellation
	// with the highest attempt heard for that request.
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

// note records c, whose record lives under key (fabric.CancelKey); a note
// for a later attempt covers more, so it wins.
func (s *cancelSet) note(key string, c protocol.Cancel, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.notes[key]; !ok || old.c.Attempt <= c.Attempt {
		s.notes[key] = cancelNote{c: c, at: at}
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

// covers reports whether the note under key covers inv, and whether the answer is
// authoritative: a covering note always is, a miss only while the copy is
// current at reconnect count epoch.
func (s *cancelSet) covers(key string, inv protocol.Invoke, epoch uint64) (covered, sure bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n, ok := s.notes[key]; ok && fabric.Covers(n.c, inv) {
		return true, true
	}
	return false, s.current && s.epoch == epoch
}

// reconnects is the connection's reconnect count: a message delivered on a
// new connection is processed after the count went up.
func (a *Agent) reconnects() uint64 { return a.nc.Stats().Reconnects }

// poolOf returns the pool of a registered tool; the tools map is only read
// once Run started.
func (a *Agent) poolOf(tool string) string {
	if t, ok := a.tools[tool]; ok {
		return t.spec.pool
	}
	return tool
}

// pools returns the pools of the registered tools, each once: the agent
// watches the cancel records of each (fabric.CancelKeys), through one
// single-filter watcher per pool, which a pool's NATS permissions can
// confine to its own records.
func (a *Agent) pools() []string {
	var out []string
	for _, t := range a.tools {
		if !slices.Contains(out, t.spec.pool) {
			out = append(out, t.spec.pool)
		}
	}
	slices.Sort(out)
	return out
}

// watchPools starts one watcher per pool; on an error it stops those it
// started.
func (a *Agent) watchPools(ctx context.Context) ([]jetstream.KeyWatcher, error) {
	var ws []jetstream.KeyWatcher
	for _, pool := range a.pools() {
		w, err := a.cancelKV.Watch(ctx, fabric.CancelKeys(pool))
		if err != nil {
			stopWatchers(ws)
			return nil, err
		}
		ws = append(ws, w)
	}
	return ws, nil
}

func stopWatchers(ws []jetstream.KeyWatcher) {
	for _, w := range ws {
		_ = w.Stop()
	}
}

// startCancelWatch starts the watcher goroutine and waits until its initial
// values are in, so the first pickups already trust the copy.
func (a *Agent) startCancelWatch(ctx context.Context) error {
	wctx, stop := context.WithCancel(context.Background())
	a.stopWatch = stop
	status := a.nc.StatusChanged(nats.CONNECTED)
	epoch := a.reconnects()
	ws, err := a.watchPools(wctx)
	if err != nil {
		a.nc.RemoveStatusListener(status)
		return err
	}
	a.cancels.restart(epoch)
	synced := make(chan struct{})
	a.goTracked(func() {
		defer a.nc.RemoveStatusListener(status)
		a.watchCancels(wctx, ws, epoch, status, synced)
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
// watchers after every reconnect.
func (a *Agent) watchCancels(wctx context.Context, ws []jetstream.KeyWatcher, epoch uint64, status chan nats.Status, synced chan struct{}) {
	first := synced
	for {
		if ws != nil {
			again := a.applyCancelUpdates(wctx, ws, epoch, status, &first)
			stopWatchers(ws)
			if !again {
				return
			}
		}
		epoch = a.reconnects()
		a.cancels.restart(epoch)
		var err error
		if ws, err = a.watchPools(wctx); err != nil {
			ws = nil
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

// applyCancelUpdates feeds the set from the watchers; it reports false
// when the agent stops and true when the watchers must be restarted. The
// copy is current once every watcher has delivered its initial values.
func (a *Agent) applyCancelUpdates(wctx context.Context, ws []jetstream.KeyWatcher, epoch uint64, status chan nats.Status, first *chan struct{}) bool {
	// Two fixed cases, then one per watcher: an agent serves one pool, a
	// test's agent a few, so a select over a slice is enough.
	cases := []reflect.SelectCase{
		{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(wctx.Done())},
		{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(status)},
	}
	for _, w := range ws {
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(w.Updates())})
	}
	initial := make([]bool, len(ws))
	behind := len(ws)
	for {
		i, v, ok := reflect.Select(cases)
		switch i {
		case 0:
			return false
		case 1:
			if a.reconnects() != epoch {
				return true
			}
			continue
		}
		if !ok {
			return wctx.Err() == nil
		}
		e, _ := v.Interface().(jetstream.KeyValueEntry)
		if e == nil {
			if w := i - 2; !initial[w] {
				initial[w] = true
				behind--
			}
			if behind == 0 {
				a.cancels.caughtUp(epoch)
				if *first != nil {
					close(*first)
					*first = nil
				}
			}
			continue
		}
		a.applyCancelEntry(e)
	}
}

func (a *Agent) applyCancelEntry(e jetstream.KeyValueEntry) {
	if e.Operation() != jetstream.KeyValuePut {
		a.cancels.forget(e.Key())
		return
	}
	c, err := a.codec.OpenCancelRecord(e.Value())
	if err == nil && fabric.CancelKey(a.poolOf(c.Tool), c.RequestID) != e.Key() {
		err = errors.New("cancel record stored under another request's key")
	}
	if err != nil {
		a.forged(err, "rejected cancel record", "key", e.Key())
		return
	}
	a.cancels.note(e.Key(), c, e.Created())
}
