package hostloop

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/splashfabric/splashfabric/workflow"

	"github.com/splashfabric/splashfabric/internal/clip"
)

// SessionArchive keeps what a host must still be able to say about its
// sessions once the loop no longer holds them: the terminal status of each
// finished session, and the incarnations (process lifetimes) of the host,
// so a session of an earlier incarnation that has no terminal record is
// known to have been lost to a restart rather than never to have existed.
//
// The loop calls Record on its own goroutine, so Record must not block: an
// implementation queues the write and reports failures itself. Lookup and
// Incarnation are called on the goroutine of the Status caller, never on
// the loop's.
type SessionArchive interface {
	// Register stores inc before the loop takes any session. StartLoop
	// waits for it, bounded by LoopConfig.ArchiveTimeout.
	Register(ctx context.Context, inc Incarnation) error
	// Record queues the terminal status s (completed or failed) for
	// storage, without blocking.
	Record(s SessionStatus)
	// Lookup returns the recorded terminal status of id, with
	// ErrUnknownSession when there is none (or id cannot name one).
	Lookup(ctx context.Context, id SessionID) (SessionStatus, error)
	// Incarnation returns the registered incarnation id, with
	// ErrUnknownIncarnation when there is none.
	Incarnation(ctx context.Context, id string) (Incarnation, error)
	// Flush waits until every status recorded before the call is stored
	// (or its write failed), or ctx ends.
	Flush(ctx context.Context) error
}

// Incarnation is one lifetime of a host process: its session ids are
// "s-<ID>-<n>" and its request ids "<ID>-<n>".
type Incarnation struct {
	// ID is "<host id>-<12 hex digits>", drawn at random by StartLoop.
	ID string
	// HostID is the loop's LoopConfig.HostID.
	HostID string
	// Started is when the loop started.
	Started time.Time
}

// defaultArchiveTimeout bounds registering an incarnation and the flush
// at Stop when LoopConfig.ArchiveTimeout is zero.
const defaultArchiveTimeout = 10 * time.Second

// incarnationHexLen is the length of the random part of an incarnation.
const incarnationHexLen = 12

// sessionIncarnation returns the incarnation of id when id has the shape
// of a session id of hostID ("s-<host id>-<12 hex>-<base 36 counter>").
// The host id may hold '-', so the parse anchors on the known host id and
// then requires exactly the two fields that follow it.
func sessionIncarnation(hostID string, id SessionID) (string, bool) {
	rest, ok := strings.CutPrefix(string(id), "s-"+hostID+"-")
	if !ok || len(rest) < incarnationHexLen+2 || rest[incarnationHexLen] != '-' {
		return "", false
	}
	for i := range incarnationHexLen {
		if c := rest[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return "", false
		}
	}
	// A uint64 in base 36 has at most 13 digits.
	n := rest[incarnationHexLen+1:]
	if len(n) > 13 {
		return "", false
	}
	for i := 0; i < len(n); i++ {
		if c := n[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z') {
			return "", false
		}
	}
	return hostID + "-" + rest[:incarnationHexLen], true
}

// archived answers Status for a session the loop does not hold. It runs on
// the caller's goroutine.
func (l *Loop) archived(ctx context.Context, id SessionID) (SessionStatus, error) {
	unknown := fmt.Errorf("%w: %s", ErrUnknownSession, clip.Quote(id, clip.Echo))
	inc, owner, ok := ParseSessionID(id)
	if !ok {
		// Not a session id: the archive is not asked, so a malformed id
		// never reaches it.
		return SessionStatus{}, unknown
	}
	a := l.cfg.Archive
	s, err := a.Lookup(ctx, id)
	switch {
	case err == nil:
		// Hosts share the archive: any of them answers for a session
		// that ended, whichever host drove it.
		return s, nil
	case !errors.Is(err, ErrUnknownSession):
		return SessionStatus{}, fmt.Errorf("%w: session %s: %w", ErrArchiveUnavailable, clip.Quote(id, clip.Echo), err)
	}
	if l.cfg.Ledger != nil {
		if st, ok, err := l.durableStatus(ctx, id, inc, owner); ok {
			return st, err
		}
		// A ledger goes only once its outcome is archived, but both may
		// have happened between the two reads above: asked again, the
		// archive has it.
		switch s, err := a.Lookup(ctx, id); {
		case err == nil:
			return s, nil
		case !errors.Is(err, ErrUnknownSession):
			return SessionStatus{}, fmt.Errorf("%w: session %s: %w", ErrArchiveUnavailable, clip.Quote(id, clip.Echo), err)
		}
	}
	switch {
	case owner != l.cfg.HostID:
		return SessionStatus{}, &SessionElsewhereError{Session: id, Host: owner}
	case inc == l.incarnation.ID:
		// This process never had it, or forgot it before its record was
		// stored.
		return SessionStatus{}, unknown
	}
	rec, err := a.Incarnation(ctx, inc)
	switch {
	case errors.Is(err, ErrUnknownIncarnation):
		return SessionStatus{}, unknown
	case err != nil:
		return SessionStatus{}, fmt.Errorf("%w: incarnation %q: %w", ErrArchiveUnavailable, inc, err)
	}
	cause := fmt.Errorf("%w: the host process %s (started %s) ended without recording the session's outcome, so it was killed or crashed; operations it had dispatched were not cancelled and may have run, once",
		ErrHostRestarted, rec.ID, rec.Started.UTC().Format(time.RFC3339))
	return SessionStatus{
		ID:    id,
		State: SessionFailed,
		Err:   cause,
		Error: cause.Error(),
		// The session's own creation time was not kept; the start of the
		// process that accepted it is the closest bound there is.
		Created: rec.Started,
	}, nil
}

// durableStatus answers for a session another process may carry on: one
// whose incarnation's lease another live host holds is that host's to
// answer for; one whose ledger waits for a host to adopt it is suspended.
func (l *Loop) durableStatus(ctx context.Context, id SessionID, inc, owner string) (SessionStatus, bool, error) {
	if h, ok := l.cfg.Leases.(LeaseHolders); ok {
		holder, err := h.Holder(ctx, inc)
		if err != nil {
			return SessionStatus{}, true, fmt.Errorf("%w: lease of %s: %w", ErrLedgerUnavailable, inc, err)
		}
		// An earlier process of this host whose lease has not lapsed
		// yet is not another host: the session is resumed here once it
		// does.
		if host, ok := incarnationHost(holder); ok && holder != l.incarnation.ID && host != l.cfg.HostID {
			return SessionStatus{}, true, &SessionElsewhereError{Session: id, Host: host}
		}
	}
	created, found, err := l.ledgerCreated(ctx, id)
	switch {
	case err != nil:
		// Not knowing is not a verdict: a session must never read as
		// lost because a store did not answer in time.
		return SessionStatus{}, true, fmt.Errorf("%w: session %s: %w", ErrLedgerUnavailable, clip.Quote(id, clip.Echo), err)
	case !found:
		return SessionStatus{}, false, nil
	}
	// Its ledger is there and nobody drives it yet: the next adoption
	// scan (of this host or another) carries it on.
	return SessionStatus{ID: id, State: SessionSuspended, Created: created}, true, nil
}

// ledgerCreated reports whether id has a ledger and, when reading it is
// what tells, when the session was submitted (the start of this process
// otherwise, the closest bound at hand).
func (l *Loop) ledgerCreated(ctx context.Context, id SessionID) (time.Time, bool, error) {
	if p, ok := l.cfg.Ledger.(workflow.Prober); ok {
		found, err := p.Has(ctx, string(id))
		return l.incarnation.Started, found, err
	}
	entries, err := l.cfg.Ledger.Load(ctx, string(id))
	switch {
	case errors.Is(err, workflow.ErrUnknownLedger):
		return time.Time{}, false, nil
	case errors.Is(err, workflow.ErrInvalidEntry), errors.Is(err, workflow.ErrLedgerRejected):
		// Whoever resumes it fails it; until then it is not lost.
		return l.incarnation.Started, true, nil
	case err != nil:
		return time.Time{}, false, err
	}
	return entries[0].At, true, nil
}

// stoppedStatus is the terminal status recorded for a session still
// suspended when the loop stops.
func (st *loopState) stoppedStatus(s *session) SessionStatus {
	out := summaryOf(s)
	cause := fmt.Errorf("%w: the host process %s stopped with %d of the session's operations dispatched; they were not cancelled and may still run, once",
		ErrHostStopped, st.incarnation, len(s.ops))
	out.State, out.Err, out.Error, out.Value = SessionFailed, cause, cause.Error(), ""
	return out
}

// WaitingRecorder is implemented by archives whose Record queue is
// bounded: RecordWait queues s, waiting within ctx for room instead of
// dropping it. A stop records every suspended session at once, so it uses
// it when the archive has it.
type WaitingRecorder interface {
	RecordWait(ctx context.Context, s SessionStatus) error
}

// archiveSuspended records every session still suspended as failed with
// ErrHostStopped, waiting for room in the archive's queue within ctx. It
// runs on the loop goroutine as the loop ends, when waiting holds up
// nothing else.
func (st *loopState) archiveSuspended(ctx context.Context) {
	w, wait := st.cfg.Archive.(WaitingRecorder)
	for _, s := range st.sessions {
		if s.done || durableSession(s) {
			// A durable session is not over: the next process of this
			// host resumes it from its ledger.
			continue
		}
		if wait {
			// A failed wait is the archive's to count and report.
			_ = w.RecordWait(ctx, st.stoppedStatus(s))
			continue
		}
		st.cfg.Archive.Record(st.stoppedStatus(s))
	}
}
