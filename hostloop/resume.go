package hostloop

import (
	"context"
	"errors"
	"fmt"

	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/workflow"
)

// resumeAll takes on the durable sessions that earlier processes of this
// host left suspended: each is replayed from its ledger in a fresh runtime
// and carries on under its own id, its live operations answered under
// their recorded request ids and keys. It runs in StartLoop before the
// loop goroutine starts.
//
// A session whose outcome the archive already holds finished before its
// ledger could be removed; the ledger goes now. A ledger that does not
// verify or replay ends its session failed with ErrHostRestarted, and
// stays for whoever looks into it. Only a Log or archive that cannot be
// read stops the start.
func (st *loopState) resumeAll(ctx context.Context) error {
	ids, err := st.cfg.Ledger.Sessions(ctx)
	if err != nil {
		return fmt.Errorf("%w: listing: %w", ErrLedgerUnavailable, err)
	}
	var digests map[string]string
	for _, raw := range ids {
		id := SessionID(raw)
		if inc, ok := sessionIncarnation(st.cfg.HostID, id); !ok || inc == st.incarnation {
			continue
		}
		if a := st.cfg.Archive; a != nil {
			_, err := a.Lookup(ctx, id)
			switch {
			case err == nil:
				_ = st.cfg.Ledger.Remove(ctx, raw)
				continue
			case !errors.Is(err, ErrUnknownSession):
				return fmt.Errorf("%w: session %s: %w", ErrArchiveUnavailable, quoteID(id), err)
			}
		}
		entries, err := st.cfg.Ledger.Load(ctx, raw)
		switch {
		case errors.Is(err, workflow.ErrUnknownLedger):
			continue
		case errors.Is(err, workflow.ErrInvalidEntry):
			st.failResume(id, err)
			continue
		case err != nil:
			return fmt.Errorf("%w: session %s: %w", ErrLedgerUnavailable, quoteID(id), err)
		}
		if digests == nil {
			if digests, err = st.catalogDigests(); err != nil {
				return err
			}
		}
		clock := &sessionClock{}
		r, err := workflow.Replay(entries, workflow.ReplayConfig{
			Runtime:  sessionConfig(st.cfg, Submission{}),
			Register: st.cfg.Catalog,
			Digests:  digests,
			Clock:    clock,
		})
		if err != nil {
			st.failResume(id, err)
			continue
		}
		st.resume(id, r, clock, len(entries))
	}
	st.flush()
	return nil
}

// catalogDigests are the digests of the tools a session registers here
// now, which a resumed session's pinned definitions must match.
func (st *loopState) catalogDigests() (map[string]string, error) {
	rt := host.NewRuntime(sessionConfig(st.cfg, Submission{}))
	if st.cfg.Catalog != nil {
		if err := st.cfg.Catalog(rt); err != nil {
			return nil, fmt.Errorf("host: catalog: %w", err)
		}
	}
	return rt.ToolDigests(), nil
}

// resume adopts a replayed session and gets its live operations answered:
// each is published again under its recorded request id and key (the
// stream and the workers' journals see the same operation, so its effect
// cannot repeat), and a cancellation the earlier process had asked for is
// asked again.
func (st *loopState) resume(id SessionID, r *workflow.Resumed, clock *sessionClock, persisted int) {
	s, _ := st.adopt(newSession{rt: r.Runtime, res: r.Result, clock: clock, ledger: r.Ledger, persisted: persisted, id: id})
	sess := st.sessions[s.ID]
	sess.created = r.Ledger.Entries(0)[0].At
	for _, op := range r.Operations {
		d := &dispatched{
			s:         sess,
			id:        op.Prepared.Op,
			requestID: op.Prepared.Request,
			bo:        newBackoff(st.cfg),
			since:     st.now,
			inv:       op.Invocation,
		}
		sess.ops[d.id] = d
		st.byRequest[d.requestID] = d
		st.changedOp(d)
		if !op.CancelRequested {
			st.publish(d, op.Invocation)
			continue
		}
		inv := op.Invocation
		req := host.ExternalToolCancellationRequest{ID: inv.ID, Tool: inv.Tool, CallIndex: inv.CallIndex, Attempt: inv.Attempt, IdempotencyKey: inv.IdempotencyKey}
		if err := st.cfg.Transport.Cancel(context.Background(), cancelFor(d.requestID, req)); err != nil {
			st.reject("cancel", err)
		}
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

// abandonResumed drops what resumeAll took on when StartLoop fails after
// all: the sessions stay in their ledgers for the next start.
func (st *loopState) abandonResumed() {
	for _, s := range st.sessions {
		s.rt.ReleaseScript()
	}
	clear(st.sessions)
	clear(st.byRequest)
}
