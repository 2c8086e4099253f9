package hostloop

import (
	"github.com/splashfabric/splashfabric/host"

	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/splashfabric/splashfabric/workflow"

	"github.com/splashfabric/splashfabric/internal/clip"
)

// Submission is a script to run in a new session.
type Submission struct {
	// Source is the JavaScript to evaluate.
	Source string
	// Grants, ToolCallBudget, MaxPending and ExecutionBudget override
	// the loop's runtime template when non-zero.
	Grants []string
	// Tools, when not nil, are the tool patterns the session may call
	// (host.Config.Tools); nil keeps the template's.
	Tools           []string
	ToolCallBudget  int
	MaxPending      int
	ExecutionBudget time.Duration
	// Restart says what a later process of this host does with the
	// session if this one ends first; "" takes LoopConfig.Restart. It
	// matters only with a LoopConfig.Ledger.
	Restart workflow.RestartPolicy
	// MaxLifetime, when positive, ends the session once it has lived
	// that long (workflow.ErrMaxLifetime): its live operations are
	// cancelled, as an operator's cancel does. Zero: it lives as long as
	// its script waits.
	MaxLifetime time.Duration
	// Owner names who submitted the session (an API token's owner), the
	// tenant it runs for (host.Config.Owner): its script's slices are
	// scheduled fairly between owners, it shares a realm with its owner's
	// sessions only, and it counts in its owner's share of the sessions.
	// It is kept with the session, in its ledger and its archived
	// outcome, and reported in its status, so any host tells who the
	// session is for, and a resumed session runs for the same tenant.
	Owner string
	// Trace is the W3C traceparent of whatever submitted the session
	// (an API request's span), or "". The loop does not read it: it keeps
	// it with the session, reports it in SessionStatus.Trace and records
	// it in a durable session's ledger, so the session's spans join its
	// submitter's trace in this process and in any that resumes it.
	Trace string
}

// SessionState is where a session's script stands.
type SessionState string

// Session states.
const (
	SessionSuspended SessionState = "suspended"
	SessionCompleted SessionState = "completed"
	SessionFailed    SessionState = "failed"
	// SessionCancelled: an operator ended it (CancelSession).
	SessionCancelled SessionState = "cancelled"
)

// Terminal reports whether a session in state s has ended.
func (s SessionState) Terminal() bool {
	return s == SessionCompleted || s == SessionFailed || s == SessionCancelled
}

// SessionStatus is a snapshot of one session.
type SessionStatus struct {
	ID    SessionID
	State SessionState
	Value string
	// Error is the reason of a failed session, as text; Err is the same
	// reason as an error, matchable with errors.Is (ErrHostRestarted,
	// ErrHostStopped, ...). A status read back from an archive keeps the
	// text and only the sentinels its implementation documents.
	Error   string
	Err     error
	Created time.Time
	// Truncated reports that an archive cut Value or Error to fit its
	// record bound.
	Truncated bool
	// Operations lists the session's live (not yet terminal) operations.
	Operations []OperationStatus
	// Owner is the submission's Owner.
	Owner string
	// Trace is the session's Submission.Trace, as submitted or as its
	// ledger kept it.
	Trace string
	// Resumed: this process brought the session back from its ledger
	// (after a restart, or adopting another host's); the audit events
	// reported for it before its first status are its replay.
	Resumed bool
	// Audit is set only on the status of a finished session as it is
	// recorded (SessionArchive.Record keeps what fits of it, newest
	// first, beside the outcome) and as an archive reads it back; Status
	// returns it as the session's audit.
	Audit []host.AuditEvent
}

// OperationStatus describes one live operation, for `splash ops`.
type OperationStatus struct {
	Session   SessionID
	ID        host.ExternalToolID
	RequestID string
	Tool      string
	State     host.OperationState
	Attempt   uint32
	Worker    string
	Since     time.Time
	// CancelDisposition is the worker's last answer to a cancellation.
	CancelDisposition string
}

// Submit starts a session and runs its script until it first suspends or
// ends.
//
// The session's runtime is built and its first step evaluated on the
// caller's goroutine: the runtime belongs to no session yet, so nothing
// else can touch it, and building it (a fresh script engine, the dearest
// part of a submission) runs in parallel across callers. Its JavaScript
// runs one slice at a time with every other slice of the process (so the
// heap's growth is the slice's, see host.Config.MemoryBudget). The loop
// only takes ownership, claims and publishes.
//
// An error means nothing was submitted. If ctx ends before Submit answers,
// it returns ctx's error and the session is not taken, or, if it keeps a
// ledger, is withdrawn (ErrSubmissionWithdrawn) before any of its
// operations is dispatched.
func (l *Loop) Submit(ctx context.Context, sub Submission) (SessionStatus, error) {
	select {
	case <-l.stop:
		return SessionStatus{}, ErrLoopStopped
	case <-ctx.Done():
		return SessionStatus{}, ctx.Err()
	default:
	}
	if err := l.cfg.Limits.check(sub); err != nil {
		return SessionStatus{}, err
	}
	if err := l.memory.admit(sub.Owner); err != nil {
		return SessionStatus{}, err
	}
	policy := l.cfg.Restart
	if sub.Restart != "" {
		p, err := workflow.ParseRestartPolicy(string(sub.Restart))
		if err != nil {
			return SessionStatus{}, fmt.Errorf("%w: %w", ErrInvalidSubmission, err)
		}
		policy = p
	}
	n, err := prepareSession(l.cfg, sub)
	if err != nil {
		return SessionStatus{}, err
	}
	n.lifetime, n.owner, n.trace = sub.MaxLifetime, sub.Owner, sub.Trace
	if l.cfg.durable(policy) {
		n.ledger = newSubmitted(n.clock.own, n.cfg, n.rt, sub)
	}
	w := &submitWait{reply: make(chan submitAnswer, 1)}
	if err := l.send(ctx, cmdFunc(func(st *loopState) { st.take(n, w) })); err != nil {
		return SessionStatus{}, err
	}
	return w.wait(ctx, l.done)
}

// Status returns a session's snapshot and its audit log so far.
//
// With an Archive, a session the loop does not hold is looked up there, on
// the caller's goroutine: a finished session the loop forgot answers with
// its recorded status and the audit the record kept, a
// session of an earlier incarnation of this host that has no record
// answers as failed with ErrHostRestarted.
func (l *Loop) Status(ctx context.Context, id SessionID) (SessionStatus, []host.AuditEvent, error) {
	s, audit, err := l.liveStatus(ctx, id)
	if err == nil || l.cfg.Archive == nil || !errors.Is(err, ErrUnknownSession) {
		return s, audit, err
	}
	s, err = l.archived(ctx, id)
	audit, s.Audit = s.Audit, nil
	return s, audit, err
}

// liveStatus asks the loop for a session it holds.
func (l *Loop) liveStatus(ctx context.Context, id SessionID) (SessionStatus, []host.AuditEvent, error) {
	type answer struct {
		s     SessionStatus
		audit []host.AuditEvent
		err   error
	}
	a, err := call(ctx, l, func(reply chan<- answer) command {
		return cmdFunc(func(st *loopState) {
			s := st.sessions[id]
			if s == nil {
				reply <- answer{err: fmt.Errorf("%w: %s", ErrUnknownSession, clip.Quote(id, clip.Echo))}
				return
			}
			reply <- answer{s: st.status(s), audit: append([]host.AuditEvent(nil), s.audit...)}
		})
	})
	if err != nil {
		return SessionStatus{}, nil, err
	}
	return a.s, a.audit, a.err
}

// Operations lists every live operation of every session, oldest first.
func (l *Loop) Operations(ctx context.Context) ([]OperationStatus, error) {
	return call(ctx, l, func(reply chan<- []OperationStatus) command {
		return cmdFunc(func(st *loopState) {
			var out []OperationStatus
			for _, d := range st.byRequest {
				out = append(out, st.opStatus(d))
			}
			sort.Slice(out, func(i, j int) bool { return out[i].Since.Before(out[j].Since) })
			reply <- out
		})
	})
}

// Cancel asks the worker holding an operation to stop (two-phase: the
// session's promise stays pending until the worker acknowledges, or a
// result wins the race).
func (l *Loop) Cancel(ctx context.Context, id SessionID, op host.ExternalToolID) error {
	errc, err := call(ctx, l, func(reply chan<- error) command {
		return cmdFunc(func(st *loopState) {
			if s := st.sessions[id]; s != nil && st.later(s, func() { reply <- st.cancel(id, op) }) {
				return
			}
			reply <- st.cancel(id, op)
		})
	})
	if err != nil {
		return err
	}
	return errc
}

// cmdFunc adapts a closure to a command.
type cmdFunc func(*loopState)

func (f cmdFunc) run(st *loopState) { f(st) }

// newSession is a runtime whose first step ran, not yet the loop's.
type newSession struct {
	rt    *host.Runtime
	res   *host.EvalResult
	cfg   host.Config
	clock *sessionClock
	// ledger is set for a durable session.
	ledger *workflow.Ledger
	// core is a resumed session's, rebuilt from its ledger; id is its
	// id. A new session gets a core and the next id of this loop.
	core *workflow.Session
	id   SessionID
	// lifetime, owner and trace are the submission's MaxLifetime, Owner
	// and Trace (a durable session's are in its ledger).
	lifetime time.Duration
	owner    string
	trace    string
	// resumed: core was rebuilt from its ledger by this process.
	resumed bool
}

// prepareSession builds a session's runtime from the loop's template and
// sub, registers the catalog and evaluates the script's first step.
func prepareSession(lc LoopConfig, sub Submission) (newSession, error) {
	cfg := sessionConfig(lc, sub)
	clock := &sessionClock{own: lc.Clock.Now()}
	cfg.Clock = clock
	rt := host.NewRuntime(cfg)
	if lc.Catalog != nil {
		if err := lc.Catalog(rt); err != nil {
			return newSession{}, fmt.Errorf("host: catalog: %w", err)
		}
	}
	res, err := rt.Eval(sub.Source)
	if err != nil {
		return newSession{}, err
	}
	if res != nil && errors.Is(res.Err, host.ErrUnknownTool) {
		// A script that names a tool the host does not offer is refused
		// outright rather than kept as a failed session: the caller made
		// a mistake the API can name.
		return newSession{}, res.Err
	}
	return newSession{rt: rt, res: res, cfg: cfg, clock: clock}, nil
}

// sessionConfig is the runtime config of a session: the loop's template
// with the submission's overrides and the loop's defaults.
func sessionConfig(lc LoopConfig, sub Submission) host.Config {
	cfg := lc.Runtime
	if sub.Grants != nil {
		cfg.Grants = sub.Grants
	}
	if sub.Tools != nil {
		cfg.Tools = sub.Tools
	}
	if sub.Owner != "" {
		cfg.Owner = sub.Owner
	}
	switch {
	case sub.ToolCallBudget > 0:
		cfg.ToolCallBudget = sub.ToolCallBudget
	case cfg.ToolCallBudget == 0:
		cfg.ToolCallBudget = lc.Limits.DefaultToolCallBudget
	}
	switch {
	case sub.MaxPending > 0:
		cfg.MaxPending = sub.MaxPending
	case cfg.MaxPending == 0:
		cfg.MaxPending = lc.Limits.DefaultMaxPending
	}
	if sub.ExecutionBudget > 0 {
		cfg.ExecutionBudget = sub.ExecutionBudget
	}
	if cfg.MemoryBudget == 0 {
		cfg.MemoryBudget = lc.Limits.SessionMemoryBudget
	}
	if cfg.AuditLimit == 0 {
		// The loop drains after every step. One step records at most a
		// start and a claim for each operation it may hold pending,
		// which the observer needs whole (its series follow claims);
		// beyond them (a script retrying refused starts in a loop) the
		// newest are kept and the rest counted, not held until the drain.
		cfg.AuditLimit = 2*cfg.MaxPending + lc.AuditPerSession
	}
	return cfg
}

// adopt makes rt, whose first step gave res, a session of the loop. A
// script that is still waiting counts against the suspended sessions the
// limits allow; over them it is refused before anything it started is
// claimed, so nothing was dispatched.
func (st *loopState) adopt(n newSession) (SessionStatus, error) {
	if (n.res == nil || n.res.Suspended) && n.id == "" && st.suspended >= st.cfg.Limits.MaxSuspendedSessions {
		return SessionStatus{}, fmt.Errorf("%w: %d suspended, the limit", ErrHostBusy, st.suspended)
	}
	if (n.res == nil || n.res.Suspended) && n.id == "" {
		if err := st.ownerRoom(n.owner); err != nil {
			return SessionStatus{}, err
		}
	}
	s := &session{
		id:      n.id,
		core:    n.core,
		clock:   n.clock,
		created: st.now,
		ops:     make(map[host.ExternalToolID]*dispatched),
		trace:   n.trace,
		resumed: n.resumed,
	}
	if s.id == "" {
		st.nextSession++
		s.id = SessionID("s-" + st.incarnation + "-" + strconv.FormatUint(st.nextSession, 36))
	}
	if s.core == nil {
		s.core = workflow.NewSession(workflow.Config{Runtime: n.rt, First: n.res, Clock: n.clock, Ledger: n.ledger, RequestID: st.requestID})
	}
	// From now on its slices never hold the loop beyond a quantum.
	s.core.SetTurns(st.turns, s)
	lifetime := n.lifetime
	s.owner = n.owner
	if l := s.core.Ledger(); l != nil {
		sub := l.Submitted()
		s.created, lifetime, s.owner, s.trace = l.Entries(0)[0].At, sub.MaxLifetime, sub.Owner, sub.Trace
	}
	if lifetime > 0 {
		st.timers.push(timerEntry{at: s.created.Add(lifetime), kind: timerLifetime, s: s})
	}
	st.sessions[s.id] = s
	st.takeResult(s)
	if o, ok := st.cfg.Observer.(StartObserver); ok {
		o.SessionStarted(summaryOf(s))
	}
	st.touch(s)
	// Counted until it is done; one that finished at once is done at
	// this step's flush.
	st.suspended++
	st.owned[s.owner]++
	// Claim now so the returned status already lists the dispatches.
	for _, op := range s.core.Claim() {
		st.track(s, op)
	}
	return st.status(s), nil
}

func (st *loopState) cancel(id SessionID, op host.ExternalToolID) error {
	s := st.sessions[id]
	if s == nil {
		return st.unknownSession(id)
	}
	d := s.ops[op]
	if d == nil {
		return fmt.Errorf("%w: %s", host.ErrUnknownOperation, op)
	}
	st.changedOp(d)
	return s.core.RequestCancel(d.op)
}

func (st *loopState) status(s *session) SessionStatus {
	out := summaryOf(s)
	for _, d := range s.ops {
		out.Operations = append(out.Operations, st.opStatus(d))
	}
	sort.Slice(out.Operations, func(i, j int) bool { return out.Operations[i].ID < out.Operations[j].ID })
	return out
}

// summaryOf is s's status without its operations: all an archive keeps,
// since a finished session's live operations (dropped promises) belong to
// this process only.
func summaryOf(s *session) SessionStatus {
	out := SessionStatus{ID: s.id, Created: s.created, State: SessionSuspended, Truncated: s.truncated, Owner: s.owner, Trace: s.trace, Resumed: s.resumed}
	if r := s.result; r != nil {
		switch {
		case r.Err != nil && errors.Is(r.Err, workflow.ErrSessionCancelled):
			out.State, out.Err, out.Error = SessionCancelled, r.Err, r.Err.Error()
		case r.Err != nil:
			out.State, out.Err, out.Error = SessionFailed, r.Err, r.Err.Error()
		case !r.Suspended:
			out.State, out.Value = SessionCompleted, r.Value
		}
	}
	return out
}

func (st *loopState) opStatus(d *dispatched) OperationStatus {
	o := OperationStatus{
		Session:           d.s.id,
		ID:                d.op.ID,
		RequestID:         d.requestID(),
		Tool:              d.op.Inv.Tool,
		Attempt:           d.op.Inv.Attempt,
		Worker:            d.worker,
		Since:             d.since,
		CancelDisposition: string(d.cancelDisposition),
	}
	switch info, ok := d.s.core.Operation(d.op.ID); {
	case d.op.Final != 0:
		o.State = d.op.Final
	case ok:
		o.State = info.State
	}
	return o
}
