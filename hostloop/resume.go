package hostloop

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/workflow"
)

// resumable is a session rebuilt from its ledger off the loop, ready for
// the loop to carry on; failed is set for one that cannot be resumed.
type resumable struct {
	id     SessionID
	host   string // the session's host id, when it is another host's
	core   *workflow.Session
	clock  *sessionClock
	failed error
}

// resumeOwn takes on the durable sessions that earlier processes of this
// host left. It runs in StartLoop before the loop goroutine starts. With
// Leases, an incarnation another live host holds (it adopted it) is left
// to that host.
//
// A session whose outcome the archive already holds finished before its
// ledger could be removed; the ledger goes now. A ledger that does not
// verify or replay ends its session failed with ErrHostRestarted, and
// stays for whoever looks into it. Only stores that cannot be read stop
// the start.
func (l *Loop) resumeOwn(ctx context.Context) error {
	groups, err := l.ledgerGroups(ctx)
	if err != nil {
		return err
	}
	for _, inc := range slices.Sorted(maps.Keys(groups)) {
		if host, _ := incarnationHost(inc); host != l.cfg.HostID {
			continue // another host's: the adoption scan's
		}
		if err := l.take(ctx, inc); errors.Is(err, ErrLeaseHeld) {
			continue
		} else if err != nil {
			return fmt.Errorf("%w: lease of %s: %w", ErrLedgerUnavailable, inc, err)
		}
		rs, err := l.loadResumable(ctx, groups[inc])
		if err != nil {
			return err
		}
		l.st.takeResumed(rs)
	}
	l.st.flush()
	return nil
}

// ledgerGroups lists the sessions that have a ledger, by incarnation,
// leaving out this process's own and the incarnations it holds.
func (l *Loop) ledgerGroups(ctx context.Context) (map[string][]SessionID, error) {
	ids, err := l.cfg.Ledger.Sessions(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: listing: %w", ErrLedgerUnavailable, err)
	}
	groups := make(map[string][]SessionID)
	for _, raw := range ids {
		id := SessionID(raw)
		inc, _, ok := ParseSessionID(id)
		if !ok || inc == l.incarnation.ID || l.holds(inc) {
			continue
		}
		groups[inc] = append(groups[inc], id)
	}
	return groups, nil
}

// loadResumable reads and replays the ledgers of ids, on the caller's
// goroutine: nothing here touches the loop's state.
func (l *Loop) loadResumable(ctx context.Context, ids []SessionID) ([]resumable, error) {
	var digests map[string]string
	var out []resumable
	for _, id := range ids {
		raw := string(id)
		if a := l.cfg.Archive; a != nil {
			_, err := a.Lookup(ctx, id)
			switch {
			case err == nil:
				_ = l.cfg.Ledger.Remove(ctx, raw)
				continue
			case !errors.Is(err, ErrUnknownSession):
				return nil, fmt.Errorf("%w: session %s: %w", ErrArchiveUnavailable, quoteID(id), err)
			}
		}
		rs := resumable{id: id}
		if _, h, _ := ParseSessionID(id); h != l.cfg.HostID {
			rs.host = h
		}
		entries, err := l.cfg.Ledger.Load(ctx, raw)
		switch {
		case errors.Is(err, workflow.ErrUnknownLedger):
			continue
		case errors.Is(err, workflow.ErrInvalidEntry):
			rs.failed = err
			out = append(out, rs)
			continue
		case err != nil:
			return nil, fmt.Errorf("%w: session %s: %w", ErrLedgerUnavailable, quoteID(id), err)
		}
		if digests == nil {
			if digests, err = catalogDigests(l.cfg); err != nil {
				return nil, err
			}
		}
		rs.clock = &sessionClock{}
		rs.core, rs.failed = workflow.Restore(entries, workflow.ReplayConfig{
			Runtime:   sessionConfig(l.cfg, Submission{}),
			Register:  l.cfg.Catalog,
			Digests:   digests,
			Clock:     rs.clock,
			RequestID: l.st.requestID,
		})
		out = append(out, rs)
	}
	return out, nil
}

// catalogDigests are the digests of the tools a session registers here
// now, which a resumed session's pinned definitions must match.
func catalogDigests(cfg LoopConfig) (map[string]string, error) {
	rt := host.NewRuntime(sessionConfig(cfg, Submission{}))
	if cfg.Catalog != nil {
		if err := cfg.Catalog(rt); err != nil {
			return nil, fmt.Errorf("host: catalog: %w", err)
		}
	}
	return rt.ToolDigests(), nil
}

// takeResumed carries on, or ends, the sessions rebuilt off the loop.
func (st *loopState) takeResumed(rs []resumable) {
	for _, r := range rs {
		if st.sessions[r.id] != nil {
			continue // already here: never two runtimes for one session
		}
		if r.failed != nil {
			st.failResume(r.id, r.failed)
			continue
		}
		st.resume(r)
	}
}

// resume adopts a replayed session and gets its live operations answered.
// One whose attempt is recent enough for the invocation stream to still
// know its message id is published again under its recorded request id,
// key and attempt: the stream drops it if it was stored before, so it is
// never dispatched twice; an older one is reconciled with the tool's
// workers instead. A cancellation an earlier process had asked for is
// asked again.
func (st *loopState) resume(r resumable) {
	s, _ := st.adopt(newSession{core: r.core, clock: r.clock, id: r.id})
	sess := st.sessions[s.ID]
	sess.host = r.host
	for _, op := range r.core.Ops() {
		if !op.Sent() {
			continue // claimed just now: the script started it again
		}
		d := sess.ops[op.ID]
		if d == nil {
			d = st.track(sess, op)
		}
		d.dispatched = op.AttemptAt
		if info, ok := r.core.Operation(op.ID); ok && info.State == host.CancellationRequested {
			r.core.ResendCancel(op)
			st.scheduleReconcile(d)
			continue
		}
		if st.now.Sub(op.AttemptAt) < st.cfg.DuplicateWindow*9/10 {
			// Published again under the same message id: the stream
			// stores it only if the earlier process never did, so this
			// is a first dispatch or nothing.
			r.core.Republish(op)
			continue
		}
		// Past the stream's memory of its message id, a publish could be
		// a second dispatch: the workers are asked instead, and the
		// policy decides.
		st.reconcileNow(d)
	}
}

// failResume ends a session that cannot be resumed, in the archive where
// Status finds it.
func (st *loopState) failResume(id SessionID, why error) {
	st.reject("resume", why)
	a := st.cfg.Archive
	if a == nil {
		return
	}
	cause := fmt.Errorf("%w: its ledger could not be resumed: %w", ErrHostRestarted, why)
	a.Record(SessionStatus{ID: id, State: SessionFailed, Err: cause, Error: cause.Error(), Created: st.now})
}

// abandonResumed drops what resumeOwn took on when StartLoop fails after
// all: the sessions stay in their ledgers for the next start.
func (st *loopState) abandonResumed() {
	for _, s := range st.sessions {
		s.core.ReleaseScript()
	}
	clear(st.sessions)
	clear(st.byRequest)
}
