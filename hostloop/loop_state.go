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

	"github.com/splashfabric/splashfabric/internal/clip"
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
	// can have something new to claim, a new deadline, new audit or
	// something ready.
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
	// removedDone carries the sessions whose ledger removal is done.
	removedDone chan *session
	// batch gathers the appends of the current step (see writeBatch).
	batch []pendingWrite
	// reconcileDone carries the workers' accounts of operations.
	reconcileDone chan reconcileAnswer
	// resuming holds the incarnations whose sessions the resumer is
	// bringing back; parked holds, by request id, the answers to their
	// requests that came before their session was in.
	resuming map[string]bool
	parked   map[string][]Event
	// resumingOwn: the resumer has not yet taken on what this host's
	// earlier processes left (see park).
	resumingOwn bool
	bg          *sync.WaitGroup
	gone        <-chan struct{}
	// turns tells the loop when a running session's slice may go on.
	turns *host.Turns
	// owned counts the sessions not done of each owner, against
	// Limits.MaxSessionsPerOwner.
	owned map[string]int
}

// settledMemory bounds how many settled operations the loop remembers for
// late results.
const settledMemory = 4096

// session is one script and the core that owns its runtime and ledger.
type session struct {
	id SessionID
	// core owns the runtime and the ledger; the loop reaches the runtime
	// only through it.
	core  *workflow.Session
	clock *sessionClock
	// host is the id of the host whose process accepted the session, when
	// this host adopted it; its workers answer there.
	host    string
	created time.Time
	// owner is who submitted it (Submission.Owner).
	owner string
	// result is the core's outcome as last taken, bounded once final
	// (see keep); truncated: boundResult cut its error text to fit.
	result    *host.EvalResult
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
	// onAccepted, if set, answers the submission once the core accepts
	// it (its ledger's first write is stored, or it needs none);
	// submitter is that submission, to tell whether its caller left.
	onAccepted func()
	submitter  *submitWait
	// trace is the submission's traceparent (Submission.Trace);
	// resumed: the session came back from its ledger here.
	trace   string
	resumed bool
	// deferred holds what waits for the session's running slice to end
	// (see later).
	deferred []func()
}

// dispatched is the loop's bookkeeping of one operation a session claimed:
// what the core leaves to its driver (the retry backoff, the worker, what
// was reported).
type dispatched struct {
	s  *session
	op *workflow.Op
	bo backoff.BackOff
	// worker is the last worker heard from about it.
	worker string
	since  time.Time
	// cancelDisposition is the last answer to a cancellation request.
	cancelDisposition protocol.CancelDisposition
	// deniedAttempt is the last attempt told that its stream is spent.
	deniedAttempt uint32
	// changed: d is in loopState.changedOps.
	changed bool
	// answered: a worker's terminal frame for it came through the
	// transport, which then holds nothing more of it.
	answered bool
	// unsendable is why the transport can never carry the operation's
	// invocation; its operation fails at its next publish timer.
	unsendable error
	// dispatched is when the operation's current attempt was last
	// published, as far as this process knows (a resumed one's attempt
	// time): its redelivery horizon counts from there.
	dispatched time.Time
	// reconcileWait is how long before its next reconciliation.
	reconcileWait time.Duration
}

func (d *dispatched) requestID() string { return d.op.RequestID }

func newLoopState(cfg LoopConfig, incarnation string, gone <-chan struct{}) *loopState {
	return &loopState{
		cfg:           cfg,
		incarnation:   incarnation,
		now:           cfg.Clock.Now(),
		ledgerDone:    make(chan ledgerWrite),
		removedDone:   make(chan *session),
		reconcileDone: make(chan reconcileAnswer),
		bg:            new(sync.WaitGroup),
		gone:          gone,
		sessions:      make(map[SessionID]*session),
		byRequest:     make(map[string]*dispatched),
		dirty:         make(map[*session]struct{}),
		settled:       make(map[string]*dispatched),
		settledRing:   make([]string, settledMemory),
		resuming:      make(map[string]bool),
		parked:        make(map[string][]Event),
		resumingOwn:   cfg.Ledger != nil,
		turns:         host.NewTurns(),
		owned:         make(map[string]int),
	}
}

// requestID names the next operation this process claims.
func (st *loopState) requestID() string {
	st.nextRequest++
	return st.incarnation + "-" + strconv.FormatUint(st.nextRequest, 36)
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

// flush does what every step ends with, for the sessions it touched:
// drain audit, claim everything claimable, re-arm deadlines, do what the
// cores made ready, and report the new state.
func (st *loopState) flush() {
	for s := range st.dirty {
		delete(st.dirty, s)
		st.flushSession(s)
	}
	st.writeBatch()
	st.report()
}

// flushSession ends a step for one session it touched.
func (st *loopState) flushSession(s *session) {
	if st.sessions[s.id] != s {
		return // relinquished to another host
	}
	st.pump(s)
	if !s.withdrawn {
		for _, op := range s.core.Claim() {
			st.track(s, op)
		}
	}
	st.drainAudit(s)
	if next, ok := s.core.NextDeadline(); ok && !next.Equal(s.deadline) {
		s.deadline = next
		st.timers.push(timerEntry{at: next, kind: timerDeadline, s: s})
	}
	st.takeResult(s)
	if !s.done && s.result != nil && !s.result.Suspended {
		st.finishSession(s)
	}
	st.drive(s)
	if st.sessions[s.id] != s {
		return // relinquished just now
	}
	if s.clock.step == nil {
		// Its first step is over: from now on it reads the loop's time.
		s.clock.step = &st.now
	}
	if state := summaryOf(s).State; state != s.reported {
		s.reported = state
		st.reporting = append(st.reporting, s)
	}
}

// drainAudit takes the audit events the session's runtime recorded since
// the last drain, tells the observer, and keeps the newest.
func (st *loopState) drainAudit(s *session) {
	n := len(s.audit)
	if s.audit = s.core.DrainAuditTo(s.audit); len(s.audit) > n {
		if o := st.cfg.Observer; o != nil {
			o.Audit(s.id, s.audit[n:])
		}
		s.trimAudit(st.cfg.AuditPerSession)
	}
}

// takeResult takes the core's outcome, bounding a final one before
// anything reports or stores it.
func (st *loopState) takeResult(s *session) {
	if r := s.core.Result(); r != nil && !s.done && r != s.result {
		s.keep(r, st.cfg.MaxValueBytes)
	}
}

// track starts the loop's bookkeeping of an operation its session claimed.
func (st *loopState) track(s *session, op *workflow.Op) *dispatched {
	d := &dispatched{s: s, op: op, bo: newBackoff(st.cfg), since: st.cfg.Clock.Now()}
	s.ops[op.ID] = d
	st.byRequest[op.RequestID] = d
	st.changedOp(d)
	return d
}

// drive does what s's core made ready: writes, publishes, cancels,
// acknowledgements, the end of settled operations, the answer to its
// submitter, the removal of its ledger, or its relinquishment.
func (st *loopState) drive(s *session) {
	for st.sessions[s.id] == s && s.core.HasReady() {
		st.doReady(s, s.core.Ready())
	}
}

func (st *loopState) doReady(s *session, rd workflow.Ready) {
	for _, op := range rd.Settled {
		if d := s.ops[op.ID]; d != nil && d.op == op {
			st.forget(d)
		}
	}
	if rd.Relinquish {
		for _, ack := range rd.Acks {
			ack()
		}
		st.relinquish(s)
		return
	}
	if rd.Accepted {
		s.accepted()
	}
	for _, op := range rd.Publish {
		if d := st.byRequest[op.RequestID]; d != nil && d.op == op {
			st.publish(d)
		}
	}
	st.sendCancels(rd.Cancel)
	for _, ack := range rd.Acks {
		ack()
	}
	if rd.Append != nil {
		st.write(s, rd.Append)
	}
	if rd.Remove != nil {
		st.removeLedger(s, rd.Remove.Acks)
	}
}

func (st *loopState) sendCancels(cs []workflow.CancelOut) {
	for _, c := range cs {
		if err := st.cfg.Transport.Cancel(context.Background(), cancelFor(c.Op.RequestID, c.Request)); err != nil {
			st.reject("cancel", err)
		}
	}
}

// finishSession books the end of s, whose result is final.
func (st *loopState) finishSession(s *session) {
	s.done = true
	st.suspended--
	st.disown(s)
	s.core.End()
	// Its summary is all a finished session keeps of its script: a VM
	// per finished session, thousands of them, is memory nobody reads.
	s.core.ReleaseScript()
	st.finished = append(st.finished, s.id)
	if a := st.cfg.Archive; a != nil {
		// Before retention can forget it, so there is no moment in
		// which neither the loop nor the archive's queue holds it. Its
		// audit goes with it.
		st.drainAudit(s)
		rec := summaryOf(s)
		rec.Audit = s.audit
		a.Record(rec)
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
	if s.withdrawn || !s.core.LocalPending() || s.core.Running() {
		return
	}
	more, err := s.core.Pump(pumpRounds)
	if err != nil {
		st.reject("pump", err)
		return
	}
	if more {
		st.timers.push(timerEntry{at: st.now, kind: timerPump, s: s})
	}
}

// publish hands d's current attempt to the transport.
func (st *loopState) publish(d *dispatched) {
	inv := d.op.Inv
	if inv.HasDeadline {
		// What is left now, not at the claim: a retry is published after
		// its backoff, and the worker must not run past the host.
		if left, ok := d.s.core.RemainingDeadline(d.op.ID); ok {
			inv.RemainingDeadline = left
		}
	}
	d.dispatched = st.now
	st.changedOp(d)
	st.scheduleReconcile(d)
	if err := st.send(d.s, invokeFor(d.requestID(), inv), inv); err != nil {
		// A refused publish is retried like a lost one: after a backoff,
		// with the same message id; one the transport can never carry
		// fails.
		st.publishFailed(d, err)
		return
	}
	if o := st.cfg.Observer; o != nil {
		o.Dispatched(d.s.id, inv)
	}
}

// send publishes msg; an adopted session's answers go to the events of
// the host that accepted it, where every driver of the session reads.
func (st *loopState) send(s *session, msg protocol.Invoke, inv host.ExternalInvocation) error {
	ctx := context.Background()
	if o, ok := st.cfg.Observer.(PublishObserver); ok {
		ctx = o.Publishing(ctx, s.id, msg.RequestID, inv)
	}
	if s.host != "" {
		return st.cfg.Transport.PublishFor(ctx, s.host, msg)
	}
	return st.cfg.Transport.Publish(ctx, msg)
}

func (st *loopState) nextDelay(d *dispatched) time.Duration {
	delay := d.bo.NextBackOff()
	if delay == backoff.Stop {
		delay = st.cfg.RetryMax
	}
	return delay
}

func (st *loopState) schedulePublish(d *dispatched, after time.Duration) {
	st.timers.push(timerEntry{at: st.now.Add(after), kind: timerPublish, d: d, attempt: d.op.Inv.Attempt})
}

// forget drops an operation its session settled.
func (st *loopState) forget(d *dispatched) {
	st.changedOp(d)
	delete(st.byRequest, d.requestID())
	delete(d.s.ops, d.op.ID)
	if !d.answered {
		// The host decided its end without a worker's terminal frame (a
		// deadline, a forced cancel, a reconciliation), so the
		// transport's replay window for it would otherwise wait for one;
		// a late answer is still recognised by the loop.
		st.cfg.Transport.Forget(d.requestID())
	}
	if old := st.settledRing[st.settledNext]; old != "" {
		delete(st.settled, old)
	}
	st.settledRing[st.settledNext] = d.requestID()
	st.settledNext = (st.settledNext + 1) % len(st.settledRing)
	st.settled[d.requestID()] = d
}

// lateResult writes a result for an already settled operation to its
// session's audit log; the outcome the runtime decided stands.
func (st *loopState) lateResult(d *dispatched, r *protocol.Result) {
	if err := d.s.core.RecordLateResult(d.op.ID, r.Attempt, string(r.Status), resultBytes(r)); err != nil {
		st.reject("late_result", err)
		return
	}
	st.touch(d.s)
	st.reject("late_result", fmt.Errorf("%w: %s answered after it settled", host.ErrWrongState, d.op.ID))
}

func resultBytes(r *protocol.Result) int {
	if r.Payload == nil {
		return 0
	}
	return len(r.Payload.Text) + len(r.Payload.JSON)
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
			if !st.later(e.s, func() { st.expire(e.s) }) {
				st.expire(e.s)
			}
		case timerPump:
			st.touch(e.s)
		case timerPublish:
			d := e.d
			if st.byRequest[d.requestID()] != d || d.op.Inv.Attempt != e.attempt {
				continue // settled or superseded meanwhile
			}
			if d.unsendable != nil {
				if !st.later(d.s, func() { st.failUnsendable(d) }) {
					st.failUnsendable(d)
				}
				continue
			}
			d.s.core.Republish(d.op)
			st.touch(d.s)
		case timerLedger:
			if st.sessions[e.s.id] == e.s {
				e.s.core.RetryWrite()
				st.touch(e.s)
			}
		case timerReconcile:
			if d := e.d; st.byRequest[d.requestID()] == d && d.op.Inv.Attempt == e.attempt {
				st.reconcile(d)
			}
		case timerLifetime:
			if !st.later(e.s, func() { st.endLifetime(e.s) }) {
				st.endLifetime(e.s)
			}
		case timerForce:
			if !st.later(e.s, func() { st.forceEnding(e.s) }) {
				st.forceEnding(e.s)
			}
		}
	}
}

func (st *loopState) expire(s *session) {
	if st.sessions[s.id] != s {
		return
	}
	s.core.Expire()
	st.touch(s)
}

func (st *loopState) reject(reason string, err error) {
	if o := st.cfg.Observer; o != nil {
		o.Rejected(reason, err)
	}
}

// handleEvent applies one transport event to the session it names.
func (st *loopState) handleEvent(ev Event) {
	switch ev.Kind {
	case EventPublishFailed:
		d := st.byRequest[ev.Invoke.RequestID]
		if d == nil || d.op.Inv.Attempt != ev.Invoke.Attempt {
			return
		}
		st.publishFailed(d, ev.Err)
	case EventMessage:
		st.handleMessage(ev)
	}
}

// handleMessage applies a worker frame. Its Ack, if set, is called once
// what the frame changed is stored (at once when it changed nothing). Its
// Tool, when set, is the tool whose pool sealed it: a pool answers for the
// tools it serves, never another's.
func (st *loopState) handleMessage(ev Event) {
	m, worker, tool, ack := ev.Message, ev.Worker, ev.Tool, ev.Ack
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
		ackNow(ack)
		return
	}
	d := st.byRequest[requestID]
	if d == nil && st.park(ev, requestID) {
		return
	}
	if d != nil && tool != "" && tool != d.op.Inv.Tool {
		ackNow(ack)
		st.reject("wrong_pool", fmt.Errorf("%w: an answer sealed by the pool of %q for %s, an operation of %q", host.ErrWrongState, tool, clip.Quote(requestID, clip.Echo), d.op.Inv.Tool))
		return
	}
	if d == nil {
		late := st.settled[requestID]
		if late != nil && tool != "" && tool != late.op.Inv.Tool {
			ackNow(ack)
			st.reject("wrong_pool", fmt.Errorf("%w: an answer sealed by the pool of %q for %s, an operation of %q", host.ErrWrongState, tool, clip.Quote(requestID, clip.Echo), late.op.Inv.Tool))
			return
		}
		if late != nil && st.sessions[late.s.id] == late.s {
			// Another delivery of an answer already taken (JetStream
			// redelivers what was not acknowledged yet): it is let go
			// only once what the first one changed is stored, or the
			// message would not come again if this host died first.
			late.s.core.Acknowledge(ack)
			st.touch(late.s)
		} else {
			ackNow(ack)
		}
		if late != nil && m.Kind == protocol.KindResult {
			st.lateResult(late, m.Result)
			return
		}
		if !strings.HasPrefix(requestID, st.incarnation+"-") && strings.HasPrefix(requestID, st.cfg.HostID+"-") {
			// Its session died with that process (ErrHostRestarted or
			// ErrHostStopped): the answer is dropped, and the call is
			// never dispatched again, so its effect cannot repeat.
			st.reject("unknown_request", fmt.Errorf("%w: %s was dispatched by an earlier process of this host", host.ErrUnknownOperation, clip.Quote(requestID, clip.Echo)))
			return
		}
		st.reject("unknown_request", fmt.Errorf("%w: %s", host.ErrUnknownOperation, clip.Quote(requestID, clip.Echo)))
		return
	}
	if st.later(d.s, func() { st.handleMessage(ev) }) {
		return
	}
	core := d.s.core
	if attempt != 0 && attempt != d.op.Inv.Attempt {
		core.Acknowledge(ack)
		st.reject("stale_attempt", fmt.Errorf("%w: attempt %d, current %d", host.ErrWrongState, attempt, d.op.Inv.Attempt))
		return
	}
	if worker != "" {
		d.worker = worker
	}
	st.changedOp(d)
	switch m.Kind {
	case protocol.KindResult:
		st.applyResult(d, m.Result, ack)
	case protocol.KindChunk:
		core.Acknowledge(ack)
		c, err := core.Chunk(d.op, m.Chunk.Text)
		if err != nil {
			st.reject("chunk", err)
			if errors.Is(err, host.ErrStreamLimitExceeded) {
				st.denyStream(d, err)
			}
			return
		}
		if o := st.cfg.Observer; o != nil {
			o.Chunk(d.s.id, c)
		}
	case protocol.KindCancelDisposition:
		d.cancelDisposition = m.CancelDisp.Disposition
		if m.CancelDisp.Disposition != protocol.CancelAcknowledged {
			core.Acknowledge(ack)
			return
		}
		d.answered = true
		if err := core.CancelAcknowledged(d.op, ack); err != nil {
			st.reject("cancel_confirm", err)
		}
	}
}

// ackNow acknowledges an event that changed nothing.
func ackNow(ack func()) {
	if ack != nil {
		ack()
	}
}

// denyStream tells the worker running d's attempt that its stream is
// spent, once per attempt: it should stop streaming rather than send
// chunks the runtime will refuse.
func (st *loopState) denyStream(d *dispatched, why error) {
	inv := d.op.Inv
	if d.deniedAttempt == inv.Attempt {
		return
	}
	d.deniedAttempt = inv.Attempt
	reason := why.Error()
	if len(reason) > 256 {
		reason = reason[:256]
	}
	if err := st.cfg.Transport.DenyStream(context.Background(), protocol.StreamDenied{
		RequestID: d.requestID(), Tool: inv.Tool, Attempt: inv.Attempt, Reason: reason,
	}); err != nil {
		st.reject("stream_denied", err)
	}
}

// applyResult hands a worker's result to its session's core; a retryable
// one is published again after its backoff.
func (st *loopState) applyResult(d *dispatched, r *protocol.Result, ack func()) {
	switch r.Status {
	case protocol.ResultRetryTransient, protocol.ResultRetryRateLimited:
	default:
		d.answered = true
	}
	ans, err := d.s.core.Answer(d.op, *r, ack)
	switch {
	case err != nil:
		st.reject(answerReason(err), err)
	case ans.Retry:
		delay := st.nextDelay(d)
		if ans.After > 0 {
			// The worker's retry-after is a floor, never shortened.
			delay = ans.After
		}
		st.schedulePublish(d, delay)
	}
}

// answerReason is the rejection reason of an answer the core refused.
func answerReason(err error) string {
	if errors.Is(err, host.ErrRetryLimitReached) || errors.Is(err, host.ErrDeadlineElapsed) {
		return "retry"
	}
	return "complete"
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
