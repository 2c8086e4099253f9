package hostloop

import (
	"github.com/splashfabric/splashfabric/host"

	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/workflow"
)

// loopState is everything the loop goroutine owns. No other goroutine may
// read or write it.
type loopState struct {
	cfg         LoopConfig
	incarnation string
	nextSession uint64
	nextRequest uint64
	// suspended counts the sessions not yet done, against
	// Limits.MaxSuspendedSessions.
	suspended int

	sessions map[SessionID]*session
	// byRequest maps a request id (one per operation, stable across
	// attempts) to the operation's bookkeeping.
	byRequest map[string]*dispatched
	timers    timerHeap
	// dirty holds the sessions touched by the current step: only they
	// can have something new to claim, a new deadline or new audit.
	dirty map[*session]struct{}
	// finished is the order in which sessions finished, for retention.
	finished []SessionID
	// settled remembers the most recently settled operations, so a
	// worker's answer that arrives after the host gave up (a deadline,
	// a confirmed cancellation) is still written to its session's audit
	// log as a late result. A ring bounds it.
	settled     map[string]*dispatched
	settledRing []string
	settledNext int
	// changedOps holds the operations whose status the current step
	// changed, reported to the observer one by one at its end: the work
	// of a step follows what it changed, not how many operations live.
	changedOps []*dispatched
	// reporting holds the sessions whose state the current step changed.
	reporting []*session
	// now is the instant the current step began: every runtime reads it
	// (see sessionClock).
	now time.Time
	// ledgerDone carries the answers of ledger writes; inflight counts
	// the writes not yet answered. bg tracks every goroutine the loop
	// started for its stores, which end once gone is closed.
	ledgerDone chan ledgerWrite
	inflight   int
	// reconcileDone carries the workers' accounts of resumed operations.
	reconcileDone chan reconcileAnswer
	bg            *sync.WaitGroup
	gone          <-chan struct{}
}

// settledMemory bounds how many settled operations the loop remembers for
// late results.
const settledMemory = 4096

// Forgetter is implemented by transports that keep per-request state (a
// replay window) the loop can release once an operation settles.
type Forgetter interface {
	Forget(requestID string)
}

// session is one script and its runtime.
type session struct {
	id    SessionID
	rt    *host.Runtime
	clock *sessionClock
	// led is the session's ledger; nil for a session that ends with its
	// process.
	led *sessionLedger
	// host is the id of the host whose process accepted the session, when
	// this host adopted it; its workers answer there.
	host    string
	created time.Time
	result  *host.EvalResult
	// truncated: boundResult cut the result's error text to fit.
	truncated bool
	// deadline is the runtime's NextDeadline as last armed, so a timer
	// entry is pushed only when it changes.
	deadline time.Time
	ops      map[host.ExternalToolID]*dispatched
	audit    []host.AuditEvent
	done     bool
	// withdrawn: its submitter left before it was stored (withdraw), so
	// nothing more of it is pumped or claimed.
	withdrawn bool
	// reported is the state last reported to the observer; a session's
	// status goes out when it changes, its operations one by one.
	reported SessionState
}

// dispatched is one claimed operation the loop has handed out.
type dispatched struct {
	s         *session
	id        host.ExternalToolID
	requestID string
	inv       host.ExternalInvocation
	bo        backoff.BackOff
	worker    string
	since     time.Time
	// cancelDisposition is the last answer to a cancellation request.
	cancelDisposition protocol.CancelDisposition
	// betweenAttempts: the last attempt ended with a retryable answer and
	// the next one is scheduled, not yet published. No worker holds the
	// operation then, so a cancellation needs no worker to acknowledge it.
	betweenAttempts bool
	// deniedAttempt is the last attempt told that its stream is spent.
	deniedAttempt uint32
	// changed: d is in loopState.changedOps. final is its terminal state
	// once it settled (the runtime may forget it later).
	changed bool
	final   host.OperationState
	// held: claimed, waiting for its prepared entry (at prepIndex of the
	// session's ledger) to be stored before it is published.
	held      bool
	prepIndex int
	// dispatched is when the operation's current attempt was last
	// published, as far as this process knows (a resumed one's prepare
	// time): its redelivery horizon counts from there.
	dispatched time.Time
}

func newLoopState(cfg LoopConfig, incarnation string, gone <-chan struct{}) *loopState {
	return &loopState{
		cfg:           cfg,
		incarnation:   incarnation,
		now:           cfg.Clock.Now(),
		ledgerDone:    make(chan ledgerWrite),
		reconcileDone: make(chan reconcileAnswer),
		bg:            new(sync.WaitGroup),
		gone:          gone,
		sessions:      make(map[SessionID]*session),
		byRequest:     make(map[string]*dispatched),
		dirty:         make(map[*session]struct{}),
		settled:       make(map[string]*dispatched),
		settledRing:   make([]string, settledMemory),
	}
}

func (st *loopState) touch(s *session) { st.dirty[s] = struct{}{} }

// changedOp marks d's status as changed by this step, and its session as
// touched.
func (st *loopState) changedOp(d *dispatched) {
	st.touch(d.s)
	if !d.changed {
		d.changed = true
		st.changedOps = append(st.changedOps, d)
	}
}

// trimAudit keeps the newest limit events of the session's audit.
func (s *session) trimAudit(limit int) {
	if over := len(s.audit) - limit; over > 0 {
		s.audit = append(s.audit[:0], s.audit[over:]...)
	}
}

// setResult records a script step; nil means the step resumed nothing.
func (st *loopState) setResult(s *session, r *host.EvalResult) {
	if r == nil || s.withdrawn {
		// A withdrawn session's outcome is its withdrawal, whatever its
		// script does with the cancellations.
		return
	}
	s.keep(r, st.cfg.MaxValueBytes)
	st.touch(s)
}

// flush does what every step ends with, for the sessions it touched:
// drain audit, claim and publish everything claimable, re-arm deadlines,
// and report the new state.
func (st *loopState) flush() {
	for s := range st.dirty {
		delete(st.dirty, s)
		st.flushSession(s)
	}
	st.report()
}

// flushSession ends a step for one session it touched.
func (st *loopState) flushSession(s *session) {
	if st.sessions[s.id] != s {
		return // relinquished to another host
	}
	st.pump(s)
	if !s.withdrawn {
		st.claimAll(s)
	}
	n := len(s.audit)
	if s.audit = s.rt.DrainAuditTo(s.audit); len(s.audit) > n {
		if o := st.cfg.Observer; o != nil {
			o.Audit(s.id, s.audit[n:])
		}
		s.trimAudit(st.cfg.AuditPerSession)
	}
	if next, ok := s.rt.NextDeadline(); ok && !next.Equal(s.deadline) {
		s.deadline = next
		st.timers.push(timerEntry{at: next, kind: timerDeadline, s: s})
	}
	if !s.done && s.result != nil && !s.result.Suspended {
		st.finishSession(s)
	}
	st.persist(s)
	if s.clock.step == nil {
		// Its first step is over: from now on it reads the loop's time.
		s.clock.step = &st.now
	}
	if state := summaryOf(s).State; state != s.reported {
		s.reported = state
		st.reporting = append(st.reporting, s)
	}
}

// finishSession books the end of s, whose result is final.
func (st *loopState) finishSession(s *session) {
	s.done = true
	st.suspended--
	// Its summary is all a finished session keeps of its script: a VM
	// per finished session, thousands of them, is memory nobody reads.
	s.rt.ReleaseScript()
	st.finished = append(st.finished, s.id)
	if a := st.cfg.Archive; a != nil {
		// Before retention can forget it, so there is no moment in
		// which neither the loop nor the archive's queue holds it.
		a.Record(summaryOf(s))
	}
	if s.led != nil {
		st.finishLedger(s)
	}
	st.retain()
}

// report tells the observer what this step changed: each operation whose
// status changed, then each session whose state changed. A session's
// status, with its live operations, goes out only when its state changes
// (when it starts and when it ends), so a step costs what it changed, not
// what is live.
func (st *loopState) report() {
	o := st.cfg.Observer
	for i, d := range st.changedOps {
		d.changed = false
		st.changedOps[i] = nil
		if o != nil {
			o.OperationChanged(d.s.id, st.opStatus(d))
		}
	}
	st.changedOps = st.changedOps[:0]
	for _, s := range st.reporting {
		if o != nil {
			o.SessionChanged(st.status(s))
		}
	}
	clear(st.reporting)
	st.reporting = st.reporting[:0]
}

// pumpRounds bounds the rounds of local tools one step runs for one
// session, so a script whose local calls start more local calls forever
// cannot hold the loop: the rest waits for a timer at once, behind
// whatever else is due.
const pumpRounds = 64

// pump runs the session's host-pumped (local) tools on the loop, as the
// reference's Pump: their handlers are the host's own Go functions.
func (st *loopState) pump(s *session) {
	if s.withdrawn {
		return
	}
	for i := 0; i < pumpRounds && s.rt.LocalPending(); i++ {
		res, err := s.rt.Pump()
		if err != nil {
			st.reject("pump", err)
			return
		}
		if res != nil {
			// Not setResult: s is being flushed, so touching it again
			// would add it to the set this step is draining.
			s.keep(res, st.cfg.MaxValueBytes)
		}
	}
	if s.rt.LocalPending() {
		st.timers.push(timerEntry{at: st.now, kind: timerPump, s: s})
	}
}

func (st *loopState) claimAll(s *session) {
	for {
		inv, ok := s.rt.ClaimNextExternalTool()
		if !ok {
			return
		}
		st.nextRequest++
		d := &dispatched{
			s:         s,
			id:        inv.ID,
			requestID: st.incarnation + "-" + strconv.FormatUint(st.nextRequest, 36),
			bo:        newBackoff(st.cfg),
			since:     st.cfg.Clock.Now(),
		}
		s.ops[inv.ID] = d
		st.byRequest[d.requestID] = d
		st.changedOp(d)
		if s.led == nil {
			st.publish(d, inv)
			continue
		}
		d.inv = inv
		if err := st.prepare(d); err != nil {
			st.reject("prepare", err)
			st.complete(d, host.Fail(err.Error()))
		}
	}
}

func (st *loopState) publish(d *dispatched, inv host.ExternalInvocation) {
	d.betweenAttempts = false
	if inv.HasDeadline {
		// What is left now, not at the claim: a retry is published after
		// its backoff, and the worker must not run past the host.
		if left, ok := d.s.rt.RemainingDeadline(d.id); ok {
			inv.RemainingDeadline = left
		}
	}
	d.inv = inv
	st.changedOp(d)
	msg := invokeFor(d.requestID, inv)
	if err := st.send(d.s, msg); err != nil {
		// A refused publish is retried like a lost one: after a backoff,
		// with the same message id.
		st.schedulePublish(d, st.nextDelay(d))
		return
	}
	if o := st.cfg.Observer; o != nil {
		o.Dispatched(d.s.id, inv)
	}
}

// send publishes msg; an adopted session's answers go to the events of
// the host that accepted it, where every driver of the session reads.
func (st *loopState) send(s *session, msg protocol.Invoke) error {
	if hp, ok := st.cfg.Transport.(HostPublisher); ok && s.host != "" {
		return hp.PublishFor(context.Background(), s.host, msg)
	}
	return st.cfg.Transport.Publish(context.Background(), msg)
}

func (st *loopState) nextDelay(d *dispatched) time.Duration {
	delay := d.bo.NextBackOff()
	if delay == backoff.Stop {
		delay = st.cfg.RetryMax
	}
	return delay
}

func (st *loopState) schedulePublish(d *dispatched, after time.Duration) {
	st.timers.push(timerEntry{at: st.now.Add(after), kind: timerPublish, d: d, attempt: d.inv.Attempt})
}

// forget drops an operation that reached a terminal state.
func (st *loopState) forget(d *dispatched) {
	if info, ok := d.s.rt.Operation(d.id); ok {
		d.final = info.State
	}
	st.changedOp(d)
	delete(st.byRequest, d.requestID)
	delete(d.s.ops, d.id)
	if old := st.settledRing[st.settledNext]; old != "" {
		delete(st.settled, old)
	}
	st.settledRing[st.settledNext] = d.requestID
	st.settledNext = (st.settledNext + 1) % len(st.settledRing)
	st.settled[d.requestID] = d
}

// lateResult writes a result for an already settled operation to its
// session's audit log; the outcome the runtime decided stands.
func (st *loopState) lateResult(d *dispatched, r *protocol.Result) {
	if err := d.s.rt.RecordLateResult(d.id, r.Attempt, string(r.Status), resultBytes(r)); err != nil {
		st.reject("late_result", err)
		return
	}
	st.touch(d.s)
	st.reject("late_result", fmt.Errorf("%w: %s answered after it settled", host.ErrWrongState, d.id))
}

func resultBytes(r *protocol.Result) int {
	if r.Payload == nil {
		return 0
	}
	return len(r.Payload.Text) + len(r.Payload.JSON)
}

// settleIfTerminal forgets d when the runtime no longer holds it live.
func (st *loopState) settleIfTerminal(d *dispatched) {
	info, ok := d.s.rt.Operation(d.id)
	if !ok || info.State.Terminal() {
		st.forget(d)
	}
}

func (st *loopState) fireTimers(now time.Time) {
	for {
		e, ok := st.timers.popDue(now)
		if !ok {
			return
		}
		switch e.kind {
		case timerDeadline:
			if e.s.deadline.Equal(e.at) {
				e.s.deadline = time.Time{}
			}
			st.expire(e.s)
		case timerPump:
			st.touch(e.s)
		case timerPublish:
			d := e.d
			if st.byRequest[d.requestID] != d || d.inv.Attempt != e.attempt {
				continue // settled or superseded meanwhile
			}
			if info, ok := d.s.rt.Operation(d.id); ok && info.State == host.CancellationRequested {
				continue // the cancellation settles it; nothing more goes out
			}
			st.publish(d, d.inv)
		case timerLedger:
			st.retryLedger(e.s)
		case timerReconcile:
			if d := e.d; st.byRequest[d.requestID] == d && d.inv.Attempt == e.attempt {
				st.reconcile(d)
			}
		}
	}
}

func (st *loopState) expire(s *session) {
	if st.sessions[s.id] != s {
		return
	}
	ids, res := s.rt.ExpireTimedOutTools()
	if len(ids) > 0 {
		st.record(s, workflow.Applied{Kind: workflow.InputExpire})
	}
	for _, id := range ids {
		if d := s.ops[id]; d != nil {
			st.forget(d)
			// The host gave up before any terminal frame came, so the
			// transport's replay window for it would otherwise wait for
			// one; a late answer is still recognised by the loop.
			if f, ok := st.cfg.Transport.(Forgetter); ok {
				f.Forget(d.requestID)
			}
		}
	}
	st.setResult(s, res)
	st.touch(s)
}

func (st *loopState) reject(reason string, err error) {
	if o := st.cfg.Observer; o != nil {
		o.Rejected(reason, err)
	}
}

// handleEvent applies one transport event to the runtime it names.
func (st *loopState) handleEvent(ev Event) {
	switch ev.Kind {
	case EventPublishFailed:
		d := st.byRequest[ev.Invoke.RequestID]
		if d == nil || d.inv.Attempt != ev.Invoke.Attempt {
			return
		}
		st.schedulePublish(d, st.nextDelay(d))
	case EventMessage:
		st.settleAck(st.handleMessage(ev.Message, ev.Worker, ev.Tool), ev.Ack)
	}
}

// handleMessage applies a worker frame and returns the operation it
// applied to, nil if none. tool, when set, is the tool whose pool sealed
// it (Event.Tool).
func (st *loopState) handleMessage(m protocol.WorkerMessage, worker, tool string) *dispatched {
	var requestID string
	var attempt uint32
	switch m.Kind {
	case protocol.KindResult:
		requestID, attempt = m.Result.RequestID, m.Result.Attempt
	case protocol.KindChunk:
		requestID = m.Chunk.RequestID
	case protocol.KindCancelDisposition:
		requestID, attempt = m.CancelDisp.RequestID, m.CancelDisp.Attempt
	default:
		st.reject("unexpected_kind", fmt.Errorf("%w: %s", host.ErrWrongState, m.Kind))
		return nil
	}
	d := st.byRequest[requestID]
	if d != nil && tool != "" && tool != d.inv.Tool {
		st.reject("wrong_pool", fmt.Errorf("%w: an answer sealed by the pool of %q for %s, an operation of %q", host.ErrWrongState, tool, quoteID(requestID), d.inv.Tool))
		return nil
	}
	if d == nil {
		if late := st.settled[requestID]; late != nil && m.Kind == protocol.KindResult {
			if tool != "" && tool != late.inv.Tool {
				st.reject("wrong_pool", fmt.Errorf("%w: an answer sealed by the pool of %q for %s, an operation of %q", host.ErrWrongState, tool, quoteID(requestID), late.inv.Tool))
				return nil
			}
			st.lateResult(late, m.Result)
			return nil
		}
		if !strings.HasPrefix(requestID, st.incarnation+"-") && strings.HasPrefix(requestID, st.cfg.HostID+"-") {
			// Its session died with that process (ErrHostRestarted or
			// ErrHostStopped): the answer is dropped, and the call is
			// never dispatched again, so its effect cannot repeat.
			st.reject("unknown_request", fmt.Errorf("%w: %s was dispatched by an earlier process of this host", host.ErrUnknownOperation, quoteID(requestID)))
			return nil
		}
		st.reject("unknown_request", fmt.Errorf("%w: %s", host.ErrUnknownOperation, quoteID(requestID)))
		return nil
	}
	if attempt != 0 && attempt != d.inv.Attempt {
		st.reject("stale_attempt", fmt.Errorf("%w: attempt %d, current %d", host.ErrWrongState, attempt, d.inv.Attempt))
		return nil
	}
	if worker != "" {
		d.worker = worker
	}
	st.changedOp(d)
	switch m.Kind {
	case protocol.KindResult:
		st.applyResult(d, m.Result)
	case protocol.KindChunk:
		c, err := d.s.rt.PushExternalToolChunk(d.id, m.Chunk.Text)
		if err != nil {
			st.reject("chunk", err)
			if errors.Is(err, host.ErrStreamLimitExceeded) {
				st.denyStream(d, err)
			}
			return nil
		}
		if o := st.cfg.Observer; o != nil {
			o.Chunk(d.s.id, c)
		}
	case protocol.KindCancelDisposition:
		d.cancelDisposition = m.CancelDisp.Disposition
		if m.CancelDisp.Disposition == protocol.CancelAcknowledged {
			st.confirmCancel(d)
		}
	}
	return d
}

// denyStream tells the worker running d's attempt that its stream is
// spent, once per attempt: it should stop streaming rather than send
// chunks the runtime will refuse.
func (st *loopState) denyStream(d *dispatched, why error) {
	sd, ok := st.cfg.Transport.(StreamDenier)
	if !ok || d.deniedAttempt == d.inv.Attempt {
		return
	}
	d.deniedAttempt = d.inv.Attempt
	reason := why.Error()
	if len(reason) > 256 {
		reason = reason[:256]
	}
	if err := sd.DenyStream(context.Background(), protocol.StreamDenied{
		RequestID: d.requestID, Tool: d.inv.Tool, Attempt: d.inv.Attempt, Reason: reason,
	}); err != nil {
		st.reject("stream_denied", err)
	}
}

// confirmCancel ends d cancelled: its worker acknowledged, or no worker
// holds it.
func (st *loopState) confirmCancel(d *dispatched) {
	res, err := d.s.rt.ConfirmExternalToolCancellation(d.id)
	if err != nil {
		st.reject("cancel_confirm", err)
		return
	}
	st.record(d.s, workflow.Applied{Kind: workflow.InputCancelConfirmed, Op: d.id})
	st.touch(d.s)
	st.setResult(d.s, res)
	st.forget(d)
}

func (st *loopState) applyResult(d *dispatched, r *protocol.Result) {
	rt := d.s.rt
	switch r.Status {
	case protocol.ResultSucceeded:
		st.complete(d, host.Ok(payloadText(r.Payload)))
	case protocol.ResultFailed:
		st.complete(d, host.Fail(r.Error))
	case protocol.ResultIndeterminate:
		st.complete(d, host.Fail("indeterminate: "+r.Error))
	case protocol.ResultRetryTransient, protocol.ResultRetryRateLimited:
		if info, ok := rt.Operation(d.id); ok && info.State == host.CancellationRequested {
			// The attempt stopped without a result, which is what the
			// host asked for: the cancellation is confirmed rather than
			// the retry refused, so the operation cannot be left
			// waiting for an answer that will never come.
			st.confirmCancel(d)
			return
		}
		class := host.RetryTransient
		if r.Status == protocol.ResultRetryRateLimited {
			class = host.RetryRateLimited
		}
		inv, err := rt.RetryExternalTool(d.id, class)
		switch {
		case err == nil:
			kind := workflow.InputRetryTransient
			if class == host.RetryRateLimited {
				kind = workflow.InputRetryRateLimited
			}
			st.record(d.s, workflow.Applied{Kind: kind, Op: d.id})
			delay := st.nextDelay(d)
			if class == host.RetryRateLimited {
				// The worker's retry-after is a floor, never shortened.
				if after := time.Duration(r.RetryAfterMillis) * time.Millisecond; after > 0 {
					delay = after
				}
			}
			d.inv = inv
			d.betweenAttempts = true
			st.schedulePublish(d, delay)
		case errors.Is(err, host.ErrRetryLimitReached):
			st.complete(d, host.Fail(r.Error))
		case errors.Is(err, host.ErrDeadlineElapsed):
			st.expire(d.s)
		default:
			st.reject("retry", err)
		}
	}
}

func (st *loopState) complete(d *dispatched, res host.ToolResult) {
	out, err := d.s.rt.CompleteExternalTool(d.id, res)
	if err != nil {
		st.reject("complete", err)
	} else if res.Err == nil {
		st.record(d.s, workflow.Applied{Kind: workflow.InputSucceeded, Op: d.id, Output: res.Output})
	} else {
		st.record(d.s, workflow.Applied{Kind: workflow.InputFailed, Op: d.id, Error: res.Err.Error()})
	}
	st.setResult(d.s, out)
	st.settleIfTerminal(d)
}

// retain forgets the oldest finished sessions beyond KeepFinished. A
// finished session that still holds a claimed operation (a dropped
// promise) goes to the back of the line instead of staying forever, so it
// is forgotten on a later pass once that operation settles.
func (st *loopState) retain() {
	for excess := len(st.finished) - st.cfg.KeepFinished; excess > 0; excess-- {
		id := st.finished[0]
		st.finished = st.finished[1:]
		if s := st.sessions[id]; s != nil && len(s.ops) > 0 {
			st.finished = append(st.finished, id)
			continue
		}
		delete(st.sessions, id)
	}
}
