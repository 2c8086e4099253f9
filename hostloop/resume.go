package hostloop

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/workflow"

	"github.com/splashfabric/splashfabric/internal/clip"
)

// Resuming carries on the durable sessions of other processes: this
// host's earlier ones at start, and any host's whose lease lapsed, by
// adoption. It runs on one goroutine of its own (the resumer), beside the
// loop, so a host is ready for new scripts at once however many sessions
// it has to resume, and each session goes live as soon as its own replay
// ends:
//
//   - an incarnation's lease is taken, and the loop told it is resuming,
//     so answers its workers send meanwhile are held (parked), not refused;
//   - its ledgers are read by a few loaders at a time, with no consumer
//     left behind (workflow.Log.Load);
//   - each is replayed on the resumer, one at a time, as background work
//     that gives way to live scripts, and handed to the loop;
//   - a ledger that does not verify or replay fails its session alone
//     (ErrLedgerRejected), and is kept for inspection; a store that does
//     not answer is tried again for that session alone;
//   - once every session is in, what is still parked is taken as answers
//     to nothing.

// resumeLoaders bounds the ledgers read at once.
const resumeLoaders = 8

// resumeRetry bounds the wait before a ledger that could not be read is
// read again.
const resumeRetry = 10 * time.Second

// ResumeObserver is implemented by Observers that follow resumption:
// how many sessions wait to be resumed, and each failure, by reason.
// Its methods may be called from any goroutine and must not block.
type ResumeObserver interface {
	// Resuming reports how many sessions wait to go live here.
	Resuming(pending int)
	// ResumeFailed reports a session, or an incarnation's adoption when
	// session is "", that could not be resumed: reason is
	// "ledger_rejected", "tools_changed", "store" (a store did not
	// answer; it is tried again) or "lease".
	ResumeFailed(reason string, session SessionID, err error)
}

// resumeJob is an incarnation whose sessions this process resumes.
type resumeJob struct {
	inc  string
	host string // the incarnation's host id, when it is another host's
	ids  []SessionID
}

// resumption is what the resumer shares with the rest of the process.
type resumption struct {
	// pending counts the sessions taken on and not yet live here (or
	// ended); any goroutine may read it.
	pending atomic.Int64
}

// Resuming reports how many sessions this loop has taken on from other
// processes and not yet brought back (for /readyz and logs); until this
// host's earlier processes' sessions are listed, the listing counts as
// one.
func (l *Loop) Resuming() int { return int(l.resumes.pending.Load()) }

func (l *Loop) resumeObserver() ResumeObserver {
	o, _ := l.cfg.Observer.(ResumeObserver)
	return o
}

func (l *Loop) addPending(n int) {
	p := l.resumes.pending.Add(int64(n))
	if o := l.resumeObserver(); o != nil {
		o.Resuming(int(p))
	}
}

func (l *Loop) resumeFailed(reason string, id SessionID, err error) {
	if o := l.resumeObserver(); o != nil {
		o.ResumeFailed(reason, id, err)
	}
}

// resumeLoop is the resumer: it resumes what earlier processes of this
// host left, then, with Leases, every AdoptEvery adopts what processes of
// any host left whose leases lapsed. It runs until Stop.
func (l *Loop) resumeLoop() {
	defer l.st.bg.Done()
	own := true
	// Until the earlier processes' sessions are listed, how many there
	// are is unknown: the listing counts as one waiting.
	l.addPending(1)
	timer := l.cfg.Clock.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-timer.C():
		}
		done := l.scan(own)
		if done && own {
			own = false
			if l.send(l.stopped, cmdFunc(func(st *loopState) { st.ownResumed() })) != nil {
				return
			}
			l.addPending(-1)
		}
		if l.cfg.Leases == nil && !own {
			return
		}
		wait := l.cfg.AdoptEvery
		if !done {
			wait = min(wait, resumeRetry)
		}
		timer.Reset(wait)
	}
}

// scan takes on the incarnations whose ledgers wait for a driver (only
// this host's earlier ones, when own) and resumes their sessions; then
// releases the incarnations whose sessions all ended. It reports whether
// the listing could be read.
func (l *Loop) scan(own bool) bool {
	ctx := l.stopped
	list, cancel := context.WithTimeout(ctx, l.cfg.ArchiveTimeout)
	groups, err := l.ledgerGroups(list)
	cancel()
	if err != nil {
		l.resumeFailed("store", "", err)
		return false
	}
	for _, inc := range slices.Sorted(maps.Keys(groups)) {
		h, _ := incarnationHost(inc)
		if own && h != l.cfg.HostID {
			continue // another host's: the adoption scans'
		}
		take, cancel := context.WithTimeout(ctx, l.cfg.ArchiveTimeout)
		err := l.take(take, inc)
		cancel()
		switch {
		case errors.Is(err, ErrLeaseHeld):
			continue // its process lives, or another host adopted it
		case err != nil:
			l.resumeFailed("lease", "", fmt.Errorf("lease of %s: %w", inc, err))
			continue
		}
		job := resumeJob{inc: inc, ids: groups[inc]}
		if h != l.cfg.HostID {
			job.host = h
		}
		if !l.resume(ctx, job) {
			return true // stopping
		}
	}
	rel, cancel := context.WithTimeout(ctx, l.cfg.ArchiveTimeout)
	l.releaseEnded(rel)
	cancel()
	return true
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

// loaded is one session's ledger read off the loop: its entries, or why
// it is not to be resumed.
type loaded struct {
	id      SessionID
	entries []workflow.Entry
	// skip: nothing to resume (its outcome is archived, or its ledger is
	// gone or kept for inspection).
	skip bool
	// err: a store did not answer; the session is read again later.
	err error
	// rejected: its ledger does not verify; the session fails.
	rejected error
}

// resume brings job's sessions back, each as soon as its replay ends. It
// returns false if the loop stopped meanwhile.
func (l *Loop) resume(ctx context.Context, job resumeJob) bool {
	if l.send(ctx, cmdFunc(func(st *loopState) { st.beginResume(job.inc) })) != nil {
		return false
	}
	if job.host != "" {
		// The answers its workers send there are parked by the loop
		// until the sessions they answer are in.
		if err := l.cfg.Transport.AdoptEvents(ctx, job.host); err != nil {
			l.resumeFailed("store", "", fmt.Errorf("events of %s: %w", job.host, err))
		}
	}
	l.addPending(len(job.ids))
	todo := job.ids
	wait := time.Second
	for len(todo) > 0 {
		var again []SessionID
		for r := range l.load(ctx, todo) {
			switch {
			case r.err != nil && ctx.Err() != nil:
				return false
			case r.err != nil:
				l.resumeFailed("store", r.id, r.err)
				again = append(again, r.id)
				continue
			case r.skip:
				l.addPending(-1)
				continue
			}
			if !l.bringBack(ctx, job, r) {
				return false
			}
		}
		if todo = again; len(todo) > 0 {
			select {
			case <-ctx.Done():
				return false
			case <-time.After(wait):
			}
			wait = min(2*wait, resumeRetry)
		}
	}
	return l.send(ctx, cmdFunc(func(st *loopState) { st.endResume(job.inc) })) == nil
}

// load reads the ledgers of ids, resumeLoaders at a time, and yields each
// as it is read.
func (l *Loop) load(ctx context.Context, ids []SessionID) <-chan loaded {
	out := make(chan loaded, resumeLoaders)
	work := make(chan SessionID)
	var wg sync.WaitGroup
	for range min(resumeLoaders, len(ids)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range work {
				out <- l.loadOne(ctx, id)
			}
		}()
	}
	go func() {
		defer close(out)
		defer wg.Wait()
		defer close(work)
		for _, id := range ids {
			select {
			case work <- id:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

// loadOne reads one session's ledger, unless the archive holds its
// outcome already (it finished before its ledger could be removed: the
// ledger goes now), or it failed as rejected before (the ledger stays for
// inspection).
func (l *Loop) loadOne(ctx context.Context, id SessionID) loaded {
	ctx, cancel := context.WithTimeout(ctx, l.cfg.ArchiveTimeout)
	defer cancel()
	raw := string(id)
	if a := l.cfg.Archive; a != nil {
		s, err := a.Lookup(ctx, id)
		switch {
		case err == nil && errors.Is(s.Err, ErrLedgerRejected):
			return loaded{id: id, skip: true}
		case err == nil:
			_ = l.cfg.Ledger.Remove(ctx, raw)
			return loaded{id: id, skip: true}
		case !errors.Is(err, ErrUnknownSession):
			return loaded{id: id, err: fmt.Errorf("%w: session %s: %w", ErrArchiveUnavailable, clip.Quote(id, clip.Echo), err)}
		}
	}
	entries, err := l.cfg.Ledger.Load(ctx, raw)
	switch {
	case errors.Is(err, workflow.ErrUnknownLedger):
		return loaded{id: id, skip: true}
	case errors.Is(err, workflow.ErrLedgerRejected), errors.Is(err, workflow.ErrInvalidEntry):
		return loaded{id: id, rejected: err}
	case err != nil:
		return loaded{id: id, err: fmt.Errorf("%w: session %s: %w", ErrLedgerUnavailable, clip.Quote(id, clip.Echo), err)}
	}
	return loaded{id: id, entries: entries}
}

// bringBack replays one loaded session and hands it to the loop; one that
// cannot be replayed is failed.
func (l *Loop) bringBack(ctx context.Context, job resumeJob, r loaded) bool {
	rs := resumable{id: r.id, host: job.host}
	if r.rejected != nil {
		rs.failed = r.rejected
	} else {
		digests, err := l.digests()
		if err != nil {
			rs.failed = err
		} else {
			rs.clock = &sessionClock{}
			rs.core, rs.failed = workflow.Restore(r.entries, workflow.ReplayConfig{
				Runtime:    sessionConfig(l.cfg, Submission{}),
				Register:   l.cfg.Catalog,
				Digests:    digests,
				Clock:      rs.clock,
				RequestID:  l.st.requestID,
				Background: true,
			})
		}
	}
	if rs.failed != nil {
		reason := "ledger_rejected"
		if errors.Is(rs.failed, workflow.ErrToolsChanged) {
			reason = "tools_changed"
		}
		l.resumeFailed(reason, r.id, rs.failed)
	}
	l.addPending(-1)
	return l.send(ctx, cmdFunc(func(st *loopState) { st.takeResumed(rs) })) == nil
}

// digests are the digests of the tools a session registers here now,
// which a resumed session's pinned definitions must match; read once.
func (l *Loop) digests() (map[string]string, error) {
	l.digestOnce.Do(func() { l.digestSet, l.digestErr = catalogDigests(l.cfg) })
	return l.digestSet, l.digestErr
}

// resumable is a session rebuilt from its ledger off the loop, ready for
// the loop to carry on; failed is set for one that cannot be resumed.
type resumable struct {
	id     SessionID
	host   string // the session's host id, when it is another host's
	core   *workflow.Session
	clock  *sessionClock
	failed error
}

// catalogDigests are the digests of the tools a session registers here
// now.
func catalogDigests(cfg LoopConfig) (map[string]string, error) {
	rt := host.NewRuntime(sessionConfig(cfg, Submission{}))
	if cfg.Catalog != nil {
		if err := cfg.Catalog(rt); err != nil {
			return nil, fmt.Errorf("host: catalog: %w", err)
		}
	}
	return rt.ToolDigests(), nil
}

// unknownSession is the error for a session the loop does not hold:
// ErrSessionResuming while its incarnation is being resumed here.
func (st *loopState) unknownSession(id SessionID) error {
	if inc, _, ok := ParseSessionID(id); ok && st.resuming[inc] {
		return fmt.Errorf("%w: %s", ErrSessionResuming, clip.Quote(id, clip.Echo))
	}
	return fmt.Errorf("%w: %s", ErrUnknownSession, clip.Quote(id, clip.Echo))
}

// beginResume marks inc's sessions as coming: answers to its requests are
// parked until their session is in, or the resumption ends.
func (st *loopState) beginResume(inc string) { st.resuming[inc] = true }

// endResume ends inc's resumption: what is still parked for it answers
// nothing here, and is taken as such.
func (st *loopState) endResume(inc string) {
	delete(st.resuming, inc)
	for req, evs := range st.parked {
		if requestIncarnation(req) != inc {
			continue
		}
		delete(st.parked, req)
		for _, ev := range evs {
			st.handleEvent(ev)
		}
	}
}

// takeResumed carries on, or ends, a session rebuilt off the loop, and
// gives it the answers parked for it.
func (st *loopState) takeResumed(r resumable) {
	if st.sessions[r.id] != nil {
		return // already here: never two runtimes for one session
	}
	if r.failed != nil {
		st.failResume(r.id, r.failed)
		return
	}
	st.resume(r)
	for _, op := range r.core.Ops() {
		evs := st.parked[op.RequestID]
		delete(st.parked, op.RequestID)
		for _, ev := range evs {
			st.handleEvent(ev)
		}
	}
}

// park holds ev, an answer to a request of an incarnation being resumed
// whose session is not in yet; it reports whether it did. Until the
// resumer has taken on this host's earlier processes, an answer to any of
// their requests is held: it may belong to a session about to be resumed.
func (st *loopState) park(ev Event, requestID string) bool {
	inc := requestIncarnation(requestID)
	switch {
	case st.resuming[inc]:
	case st.resumingOwn && inc != st.incarnation && strings.HasPrefix(inc, st.cfg.HostID+"-"):
	default:
		return false
	}
	st.parked[requestID] = append(st.parked[requestID], ev)
	return true
}

// ownResumed ends the wait for this host's earlier processes: what is
// parked for them and not for an incarnation still resuming answers
// nothing here.
func (st *loopState) ownResumed() {
	if !st.resumingOwn {
		return
	}
	st.resumingOwn = false
	for req, evs := range st.parked {
		if st.resuming[requestIncarnation(req)] {
			continue
		}
		delete(st.parked, req)
		for _, ev := range evs {
			st.handleEvent(ev)
		}
	}
}

// requestIncarnation is the incarnation of a request id
// ("<incarnation>-<n>"), "" for anything else.
func requestIncarnation(req string) string {
	for i := len(req) - 1; i >= 0; i-- {
		if req[i] == '-' {
			return req[:i]
		}
	}
	return ""
}

// resume adopts a replayed session and gets its live operations answered.
// One whose attempt is recent enough for the invocation stream to still
// know its message id is published again under its recorded request id,
// key and attempt: the stream drops it if it was stored before, so it is
// never dispatched twice; an older one is reconciled with the tool's
// workers instead. A cancellation an earlier process had asked for is
// asked again.
func (st *loopState) resume(r resumable) {
	s, _ := st.adopt(newSession{core: r.core, clock: r.clock, id: r.id, resumed: true})
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
// Status finds it. Its ledger stays, for whoever looks into it; a later
// start finds the outcome archived and leaves the ledger be.
func (st *loopState) failResume(id SessionID, why error) {
	st.reject("resume", why)
	a := st.cfg.Archive
	if a == nil {
		return
	}
	var cause error
	switch {
	case errors.Is(why, workflow.ErrToolsChanged):
		cause = fmt.Errorf("%w: its ledger could not be resumed: %w", ErrHostRestarted, why)
	default:
		cause = fmt.Errorf("%w: %w", ErrLedgerRejected, why)
	}
	a.Record(SessionStatus{ID: id, State: SessionFailed, Err: cause, Error: cause.Error(), Created: st.now})
}
