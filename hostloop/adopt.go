package hostloop

import (
	"context"
	"maps"
	"slices"
	"time"
)

// DefaultAdoptEvery is how often a loop with Leases looks for sessions
// whose host's lease lapsed, when LoopConfig.AdoptEvery is zero.
const DefaultAdoptEvery = 2 * time.Second

// take takes incarnation's lease for this process and notes it held.
// Without Leases every incarnation is this host's to take.
func (l *Loop) take(ctx context.Context, inc string) error {
	if l.cfg.Leases != nil {
		if err := l.cfg.Leases.Take(ctx, inc, l.incarnation.ID); err != nil {
			return err
		}
	}
	l.leaseMu.Lock()
	l.held[inc] = true
	l.leaseMu.Unlock()
	return nil
}

// holds reports whether this process holds inc's lease.
func (l *Loop) holds(inc string) bool {
	l.leaseMu.Lock()
	defer l.leaseMu.Unlock()
	return l.held[inc]
}

// release gives inc's lease up.
func (l *Loop) release(ctx context.Context, inc string) {
	l.leaseMu.Lock()
	delete(l.held, inc)
	l.leaseMu.Unlock()
	if l.cfg.Leases != nil {
		// A release that fails lapses instead.
		_ = l.cfg.Leases.Release(ctx, inc)
	}
}

// heldHosts is the set of hosts one of whose incarnations this process
// holds, its own included.
func (l *Loop) heldHosts() map[string]bool {
	l.leaseMu.Lock()
	defer l.leaseMu.Unlock()
	hosts := make(map[string]bool)
	for inc := range l.held {
		h, _ := incarnationHost(inc)
		hosts[h] = true
	}
	return hosts
}

// releaseEnded gives up the adopted incarnations that no longer have a
// ledger (their sessions ended), and stops reading the events of hosts
// none of whose incarnations it still holds.
func (l *Loop) releaseEnded(ctx context.Context) {
	ids, err := l.cfg.Ledger.Sessions(ctx)
	if err != nil {
		return
	}
	live := make(map[string]bool)
	for _, raw := range ids {
		if inc, _, ok := ParseSessionID(SessionID(raw)); ok {
			live[inc] = true
		}
	}
	l.leaseMu.Lock()
	var ended []string
	for inc := range l.held {
		if inc != l.incarnation.ID && !live[inc] {
			ended = append(ended, inc)
		}
	}
	l.leaseMu.Unlock()
	for _, inc := range ended {
		l.release(ctx, inc)
	}
	a := l.cfg.Transport
	if len(ended) == 0 {
		return
	}
	still := l.heldHosts()
	for _, inc := range ended {
		if h, _ := incarnationHost(inc); h != l.cfg.HostID && !still[h] {
			_ = a.ReleaseEvents(ctx, h)
		}
	}
}

// releaseAll gives up every lease this process holds, as it stops: its
// durable sessions may be carried on elsewhere at once.
func (l *Loop) releaseAll(ctx context.Context) {
	l.leaseMu.Lock()
	incs := slices.Collect(maps.Keys(l.held))
	l.leaseMu.Unlock()
	for _, inc := range incs {
		l.release(ctx, inc)
	}
}
