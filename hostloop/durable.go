package hostloop

import (
	"context"
	"errors"
	"time"

	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/workflow"
)

// The loop drives each session's core (workflow.Session): it stores the
// ledger writes the core hands out and reports how they went, and does
// what the core releases once the entries that explain it are stored.
// The ordering rules live in the core; what is here is I/O.

// ledgerWrite is an Append's answer, delivered to the loop.
type ledgerWrite struct {
	s    *session
	upTo int
	err  error
}

// durable reports whether a submission's session keeps a ledger.
func (lc LoopConfig) durable(policy workflow.RestartPolicy) bool {
	if policy == "" {
		policy = lc.Restart
	}
	return lc.Ledger != nil && policy != workflow.RestartFail
}

// newSubmitted opens the ledger of a session whose first step rt just
// ran: everything a replay needs to run the script again from the start.
func newSubmitted(at time.Time, cfg host.Config, rt *host.Runtime, sub Submission) *workflow.Ledger {
	return workflow.NewLedger(at, workflow.Submitted{
		Source:          sub.Source,
		Grants:          cfg.Grants,
		ToolGrants:      cfg.Tools,
		ToolCallBudget:  cfg.ToolCallBudget,
		MaxPending:      cfg.MaxPending,
		ExecutionBudget: cfg.ExecutionBudget,
		MemoryBudget:    cfg.MemoryBudget,
		Tools:           rt.ToolDigests(),
		Nonce:           rt.SessionNonce().Bytes(),
		Seed:            rt.RandomSeed(),
		Restart:         workflow.RestartResume,
		MaxLifetime:     sub.MaxLifetime,
		Owner:           sub.Owner,
		Trace:           sub.Trace,
	})
}

// accepted answers the submission waiting for s, once.
func (s *session) accepted() {
	s.submitter = nil
	if f := s.onAccepted; f != nil {
		s.onAccepted = nil
		f()
	}
}

// write stores one Append of s's ledger off the loop; its answer comes
// back as a ledgerWrite. With a Log that is a workflow.BatchAppender, the
// appends a step made ready are gathered and stored together as the step
// ends (writeBatch).
func (st *loopState) write(s *session, a *workflow.Append) {
	st.inflight++
	if _, ok := st.cfg.Ledger.(workflow.BatchAppender); ok && a.All == nil {
		st.batch = append(st.batch, pendingWrite{s: s, a: a})
		return
	}
	id, log, timeout, gone := string(s.id), st.cfg.Ledger, st.cfg.ArchiveTimeout, st.gone
	st.bg.Add(1)
	go func() {
		defer st.bg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		var err error
		if rw, ok := log.(workflow.Rewriter); ok && a.All != nil {
			err = rw.Rewrite(ctx, id, a.From, a.All)
		} else {
			err = log.Append(ctx, id, a.From, a.Entries)
		}
		cancel()
		select {
		case st.ledgerDone <- ledgerWrite{s: s, upTo: a.UpTo(), err: err}:
		case <-gone:
		}
	}()
}

// pendingWrite is an append gathered for the step's batch.
type pendingWrite struct {
	s *session
	a *workflow.Append
}

// writeBatch stores the appends the step gathered, in one
// workflow.BatchAppender call off the loop; each answer comes back as its
// session's ledgerWrite.
func (st *loopState) writeBatch() {
	if len(st.batch) == 0 {
		return
	}
	batch := st.batch
	st.batch = nil
	writes := make([]workflow.SessionAppend, len(batch))
	for i, w := range batch {
		writes[i] = workflow.SessionAppend{Session: string(w.s.id), From: w.a.From, Entries: w.a.Entries}
	}
	log, timeout, gone := st.cfg.Ledger.(workflow.BatchAppender), st.cfg.ArchiveTimeout, st.gone
	st.bg.Add(1)
	go func() {
		defer st.bg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		errs := log.AppendBatch(ctx, writes)
		cancel()
		for i, w := range batch {
			select {
			case st.ledgerDone <- ledgerWrite{s: w.s, upTo: w.a.UpTo(), err: errs[i]}:
			case <-gone:
				return
			}
		}
	}()
}

// ledgerWritten reports an Append's answer to its session's core: stored
// entries release what they explain; a conflict means another host owns
// the session now; any other failure is tried again after LedgerRetry.
func (st *loopState) ledgerWritten(w ledgerWrite) {
	st.inflight--
	s := w.s
	switch {
	case w.err == nil:
		s.core.Stored(w.upTo)
	case errors.Is(w.err, workflow.ErrLedgerConflict):
		st.reject("ledger_conflict", w.err)
		s.core.Conflict()
	default:
		st.reject("ledger", w.err)
		s.core.WriteFailed()
		st.timers.push(timerEntry{at: st.now.Add(st.cfg.LedgerRetry), kind: timerLedger, s: s})
	}
	if st.sessions[s.id] == s {
		st.touch(s)
	}
}

// removeLedger deletes a finished session's ledger, after the archive
// stored its outcome: in between, a restarted host finds one or the
// other, never neither. acks are the answers whose entries were never
// stored, let go once the outcome is.
func (st *loopState) removeLedger(s *session, acks []func()) {
	id, log, archive, timeout, gone := string(s.id), st.cfg.Ledger, st.cfg.Archive, st.cfg.ArchiveTimeout, st.gone
	st.bg.Add(1)
	go func() {
		defer st.bg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		if archive != nil && archive.Flush(ctx) != nil {
			// The ledger stays and its last answers are not acked: a
			// restarted host that finds no outcome replays the ledger
			// and takes those answers again.
			return
		}
		// The outcome is stored: the answers that led to it are no
		// longer needed by anyone.
		for _, ack := range acks {
			ack()
		}
		// A ledger left by a failed removal is removed by the next start
		// that finds the session's outcome archived.
		_ = log.Remove(ctx, id)
		select {
		case st.removedDone <- s:
		case <-gone:
		}
	}()
}

// ledgerRemoved takes the end of a session's ledger removal: answers that
// came for it meanwhile are let go.
func (st *loopState) ledgerRemoved(s *session) {
	s.core.Removed()
	if st.sessions[s.id] == s {
		st.touch(s)
		return
	}
	// Forgotten already (retention): only its acknowledgements and a
	// forced cancel's notices to workers are left.
	rd := s.core.Ready()
	st.sendCancels(rd.Cancel)
	for _, ack := range rd.Acks {
		ack()
	}
}

// relinquish drops a session another host took over: nothing of it is
// recorded here, since its ledger and outcome are that host's now.
func (st *loopState) relinquish(s *session) {
	st.stopRunning(s, errRelinquished)
	// Out of the loop's sessions first: a submitter waiting for the
	// first write is answered below, and one that left must not have
	// the session withdrawn here, since it is another host's now.
	delete(st.sessions, s.id)
	for _, d := range s.ops {
		delete(st.byRequest, d.requestID())
	}
	clear(s.ops)
	s.accepted()
	if !s.done {
		s.done = true
		st.suspended--
		st.disown(s)
	}
	s.core.ReleaseScript()
}

// flushLedgers stores what every durable session has not stored yet, as
// the loop stops: a write in flight is waited for, then the rest is
// written at once, each bounded by ctx.
func (st *loopState) flushLedgers(ctx context.Context) {
	for st.inflight > 0 {
		select {
		case w := <-st.ledgerDone:
			st.inflight--
			if w.err == nil {
				w.s.core.Stored(w.upTo)
			}
		case <-ctx.Done():
			return
		}
	}
	for _, s := range st.sessions {
		a := s.core.Unstored()
		if a == nil || s.done {
			continue
		}
		if a.From == 0 && s.submitter != nil && s.submitter.abandoned() {
			// Stored now, it would be withdrawn at once or, if this
			// write's answer were lost too, resumed by the next process
			// although its caller was told an error. It is withdrawn
			// instead, and a first write that may have landed removed.
			st.withdraw(s)
			st.drive(s)
			continue
		}
		if err := st.cfg.Ledger.Append(ctx, string(s.id), a.From, a.Entries); err == nil {
			s.core.Stored(a.UpTo())
		}
	}
}

// durableSession reports whether s outlives this process.
func durableSession(s *session) bool { return s.core.Durable() && !s.done }
