package hostloop

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/workflow"
)

// sessionLedger is a durable session's ledger as the loop keeps it: the
// entries in memory, how many of them are stored, and the operations
// claimed but held back until their prepared entry is stored.
type sessionLedger struct {
	l *workflow.Ledger
	// persisted is how many entries the Log holds.
	persisted int
	// writing: an Append is in flight; the next waits for its answer, so
	// a session's appends are ordered and each is fenced on the last.
	writing bool
	// retrying: the last Append failed and a timer will try again.
	retrying bool
	// unsure: an Append failed in a way that leaves unknown whether it
	// was stored (its answer lost, a timeout), so the ledger may exist
	// even with nothing persisted; a session that ends must then remove
	// it, or a later process would replay what this one ended.
	unsure bool
	// removeAfter: the session finished while an Append was in flight;
	// its ledger is removed once that write is answered.
	removeAfter bool
	// held are claimed operations not yet published, in claim order.
	held []*dispatched
	// onStored, if set, answers the submission once the first write is
	// stored (or the session ended without needing one).
	onStored func()
	// submitter, if set, is the submission waiting for the first write,
	// to tell whether its caller left; unset once it is answered.
	submitter *submitWait
	// acks are the transport acknowledgements of answers the runtime
	// applied, each waiting for the write that stores its entry (upTo).
	acks []pendingEventAck
}

type pendingEventAck struct {
	upTo int
	ack  func()
}

// settleAck acknowledges a transport event once what it changed is
// stored: at once for a session without a ledger (or nothing to store),
// after the covering write for a durable one. Until then a host that dies
// leaves the event to its next process.
func (st *loopState) settleAck(d *dispatched, ack func()) {
	if ack == nil {
		return
	}
	if d == nil || d.s.led == nil || d.s.done || d.s.led.persisted >= d.s.led.l.Len() {
		ack()
		return
	}
	lg := d.s.led
	lg.acks = append(lg.acks, pendingEventAck{upTo: lg.l.Len(), ack: ack})
}

// wrote takes a stored write of the entries up to upTo: the submission
// waiting for the first is answered, and the events they record are
// acknowledged.
func (lg *sessionLedger) wrote(upTo int) {
	lg.persisted = upTo
	lg.stored()
	lg.ackStored()
}

// ackStored acknowledges the events whose entries are stored.
func (lg *sessionLedger) ackStored() {
	n := 0
	for _, a := range lg.acks {
		if a.upTo > lg.persisted {
			lg.acks[n] = a
			n++
			continue
		}
		a.ack()
	}
	clear(lg.acks[n:])
	lg.acks = lg.acks[:n]
}

// takeAcks hands over every pending acknowledgement.
func (lg *sessionLedger) takeAcks() []func() {
	out := make([]func(), 0, len(lg.acks))
	for _, a := range lg.acks {
		out = append(out, a.ack)
	}
	lg.acks = nil
	return out
}

// mayExist reports whether the Log may hold this ledger: some of it is
// stored, or a write of it may have been.
func (lg *sessionLedger) mayExist() bool { return lg.persisted > 0 || lg.unsure }

// stored calls onStored once.
func (lg *sessionLedger) stored() {
	lg.submitter = nil
	if f := lg.onStored; f != nil {
		lg.onStored = nil
		f()
	}
}

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
	})
}

// prepare records a claimed operation in its session's ledger and holds it
// until that record is stored: an operation is never dispatched before a
// later host could find it. A record the ledger refuses (a stale prepared
// id) is never dispatched at all.
func (st *loopState) prepare(d *dispatched) error {
	lg := d.s.led
	i, err := lg.l.Prepare(d.s.clock.Now(), workflow.Prepared{
		Op:        d.id,
		CallIndex: d.inv.CallIndex,
		Tool:      d.inv.Tool,
		Input:     d.inv.Input,
		Key:       d.inv.IdempotencyKey,
		Request:   d.requestID,
	})
	if err != nil {
		return err
	}
	d.prepIndex = i
	d.held = true
	lg.held = append(lg.held, d)
	return nil
}

// record appends an input the runtime just applied to s's ledger.
func (st *loopState) record(s *session, a workflow.Applied) {
	if s.led == nil || s.done {
		return
	}
	if _, err := s.led.l.Apply(s.clock.Now(), a); err != nil {
		// The loop only records what the runtime accepted, so this is a
		// defect; a replay would stop at the gap with ErrReplay.
		st.reject("ledger", err)
	}
}

// persist starts storing the entries of s not yet stored, one Append at a
// time per session. A finished session writes nothing more: its ledger is
// removed instead.
func (st *loopState) persist(s *session) {
	lg := s.led
	if lg == nil || s.done || lg.writing || lg.retrying || lg.persisted == lg.l.Len() {
		return
	}
	from := lg.persisted
	entries := slices.Clone(lg.l.Entries(from))
	lg.writing = true
	st.inflight++
	id, log, timeout, gone := string(s.id), st.cfg.Ledger, st.cfg.ArchiveTimeout, st.gone
	st.bg.Add(1)
	go func() {
		defer st.bg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		err := log.Append(ctx, id, from, entries)
		cancel()
		select {
		case st.ledgerDone <- ledgerWrite{s: s, upTo: from + len(entries), err: err}:
		case <-gone:
		}
	}()
}

// ledgerWritten takes an Append's answer: stored entries release the
// operations they prepared; a conflict means another host owns the
// session now; any other failure is tried again later.
func (st *loopState) ledgerWritten(w ledgerWrite) {
	s, lg := w.s, w.s.led
	lg.writing = false
	st.inflight--
	switch {
	case w.err == nil:
		lg.wrote(w.upTo)
		st.release(s)
		if lg.removeAfter {
			st.removeLedger(s)
			return
		}
		st.persist(s)
	case errors.Is(w.err, workflow.ErrLedgerConflict):
		st.reject("ledger_conflict", w.err)
		st.relinquish(s)
	default:
		st.reject("ledger", w.err)
		lg.retrying = true
		lg.unsure = true
		st.timers.push(timerEntry{at: st.now.Add(st.cfg.LedgerRetry), kind: timerLedger, s: s})
	}
}

// release publishes the held operations whose prepared entries are now
// stored. One that settled meanwhile (a cancellation, a deadline) is not
// published.
func (st *loopState) release(s *session) {
	lg := s.led
	keep := lg.held[:0]
	for _, d := range lg.held {
		if d.prepIndex >= lg.persisted {
			keep = append(keep, d)
			continue
		}
		d.held = false
		if st.byRequest[d.requestID] != d {
			continue
		}
		st.publish(d, d.inv)
	}
	clear(lg.held[len(keep):])
	lg.held = keep
}

// retryLedger is the timer of a failed Append.
func (st *loopState) retryLedger(s *session) {
	if s.led == nil {
		return
	}
	s.led.retrying = false
	if s.done {
		if !s.led.writing && s.led.mayExist() {
			st.removeLedger(s)
		}
		return
	}
	st.persist(s)
}

// finishLedger ends a durable session's ledger as the session finishes:
// operations still held were never dispatched and never will be, and the
// ledger goes once no write of it is in flight.
func (st *loopState) finishLedger(s *session) {
	lg := s.led
	for _, d := range lg.held {
		if st.byRequest[d.requestID] == d {
			st.forget(d)
		}
	}
	lg.held = nil
	lg.stored()
	switch {
	case lg.writing:
		lg.removeAfter = true
	case lg.mayExist():
		st.removeLedger(s)
	default:
		for _, ack := range lg.takeAcks() {
			ack()
		}
	}
}

// removeLedger deletes a finished session's ledger, after the archive
// stored its outcome: in between, a restarted host finds one or the
// other, never neither.
func (st *loopState) removeLedger(s *session) {
	id, log, archive, timeout := string(s.id), st.cfg.Ledger, st.cfg.Archive, st.cfg.ArchiveTimeout
	acks := s.led.takeAcks()
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
	}()
}

// relinquish drops a session another host took over: nothing of it is
// recorded here, since its ledger and outcome are that host's now.
func (st *loopState) relinquish(s *session) {
	// Out of the loop's sessions first: a submitter waiting for the
	// first write is answered below, and one that left must not have
	// the session withdrawn here, since it is another host's now.
	delete(st.sessions, s.id)
	for _, d := range s.ops {
		delete(st.byRequest, d.requestID)
	}
	clear(s.ops)
	s.led.held = nil
	s.led.stored()
	for _, ack := range s.led.takeAcks() {
		ack()
	}
	if !s.done {
		s.done = true
		st.suspended--
	}
	s.rt.ReleaseScript()
}

// flushLedgers stores what every durable session has not stored yet, as
// the loop stops: a write in flight is waited for, then the rest is
// written at once, each bounded by ctx.
func (st *loopState) flushLedgers(ctx context.Context) {
	for st.inflight > 0 {
		select {
		case w := <-st.ledgerDone:
			w.s.led.writing = false
			st.inflight--
			if w.err == nil {
				w.s.led.wrote(w.upTo)
			}
		case <-ctx.Done():
			return
		}
	}
	for _, s := range st.sessions {
		lg := s.led
		if lg == nil || s.done || lg.persisted == lg.l.Len() {
			continue
		}
		if lg.persisted == 0 && lg.submitter != nil && lg.submitter.abandoned() {
			// Stored now, it would be withdrawn at once or, if this
			// write's answer were lost too, resumed by the next process
			// although its caller was told an error. It is withdrawn
			// instead, and a first write that may have landed removed.
			st.withdraw(s)
			continue
		}
		if err := st.cfg.Ledger.Append(ctx, string(s.id), lg.persisted, lg.l.Entries(lg.persisted)); err == nil {
			lg.wrote(lg.l.Len())
		}
	}
}

// durableSession reports whether s outlives this process.
func durableSession(s *session) bool { return s.led != nil && !s.done }
