package hostmetrics

import (
	"errors"
	"strings"
	"time"

	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/hostloop"
	"github.com/splashfabric/splashfabric/metrics"
	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/tracing"
)

// keepEnded bounds how many ended sessions the Observer remembers, so a
// snapshot of a session that ended (a late frame for one of its
// operations) does not count it as started again.
const keepEnded = 4096

// queueState is where an operation stands for the pending and claimed
// gauges.
type queueState uint8

const (
	notQueued queueState = iota
	pending              // published (or waiting to be), no worker frame yet
	claimed              // a worker sent a frame for the current attempt
)

// opTrack is the Observer's view of one external operation.
type opTrack struct {
	tool    string
	counted bool      // OperationStarted was recorded
	started time.Time // the first claim, for the duration
	attempt uint32
	// published is when the current attempt was handed to the transport;
	// zero until then and while a retry waits.
	published   time.Time
	state       queueState
	cancelAsked bool
	// disposition is the last cancel answer counted from a snapshot.
	disposition string
	// trace is its session's sampled trace id, the exemplar of its
	// latencies; "" when not traced.
	trace string
}

// Observer feeds a metrics.Host from a host loop. Create it with New.
type Observer struct {
	m   *metrics.Host
	now func() time.Time

	// Owned by the loop goroutine.
	ops        map[hostloop.SessionID]map[host.ExternalToolID]*opTrack
	active     map[hostloop.SessionID]struct{}
	ended      map[hostloop.SessionID]struct{}
	endedOrder []hostloop.SessionID
	pending    map[string]int
	claimed    map[string]int
	dirty      map[string]struct{}
	// traces holds the sampled trace id of each live session traced.
	traces map[hostloop.SessionID]string
}

var (
	_ hostloop.Observer      = (*Observer)(nil)
	_ hostloop.StartObserver = (*Observer)(nil)
)

// New returns an Observer that records into m. A nil m is allowed (every
// metrics.Host method is a no-op on nil), which leaves only the
// bookkeeping.
func New(m *metrics.Host) *Observer {
	return &Observer{
		m:       m,
		now:     time.Now,
		ops:     make(map[hostloop.SessionID]map[host.ExternalToolID]*opTrack),
		active:  make(map[hostloop.SessionID]struct{}),
		ended:   make(map[hostloop.SessionID]struct{}),
		pending: make(map[string]int),
		claimed: make(map[string]int),
		dirty:   make(map[string]struct{}),
		traces:  make(map[hostloop.SessionID]string),
	}
}

// SessionStarted keeps the session's trace, when it is sampled, for the
// exemplars of its operations' latencies.
func (o *Observer) SessionStarted(s hostloop.SessionStatus) {
	if sc, err := tracing.ParseTraceParent(s.Trace); err == nil && sc.IsSampled() {
		o.traces[s.ID] = sc.TraceID().String()
	}
}

func (o *Observer) track(session hostloop.SessionID, id host.ExternalToolID, tool string) *opTrack {
	ops := o.ops[session]
	if ops == nil {
		ops = make(map[host.ExternalToolID]*opTrack)
		o.ops[session] = ops
	}
	tr := ops[id]
	if tr == nil {
		tr = &opTrack{tool: tool, trace: o.traces[session]}
		ops[id] = tr
	}
	return tr
}

func (o *Observer) lookup(session hostloop.SessionID, id host.ExternalToolID) *opTrack {
	return o.ops[session][id]
}

func (o *Observer) drop(session hostloop.SessionID, id host.ExternalToolID) {
	ops := o.ops[session]
	if tr := ops[id]; tr != nil {
		o.setState(tr, notQueued)
		delete(ops, id)
	}
	if len(ops) == 0 {
		delete(o.ops, session)
	}
}

// setState moves tr between the gauges' counts; the gauges themselves are
// written once per loop call, in flush.
func (o *Observer) setState(tr *opTrack, s queueState) {
	if tr.state == s {
		return
	}
	switch tr.state {
	case pending:
		o.pending[tr.tool]--
	case claimed:
		o.claimed[tr.tool]--
	}
	switch s {
	case pending:
		o.pending[tr.tool]++
	case claimed:
		o.claimed[tr.tool]++
	}
	tr.state = s
	o.dirty[tr.tool] = struct{}{}
}

// flush writes the gauges of the tools whose counts changed.
func (o *Observer) flush() {
	for tool := range o.dirty {
		o.m.SetQueue(tool, o.pending[tool], o.claimed[tool])
		if o.pending[tool] == 0 && o.claimed[tool] == 0 {
			delete(o.pending, tool)
			delete(o.claimed, tool)
		}
		delete(o.dirty, tool)
	}
}

// workerSpoke records the first frame of the current attempt: it ends the
// dispatch latency and moves the operation from pending to claimed.
func (o *Observer) workerSpoke(tr *opTrack, at time.Time) {
	if tr.state == claimed {
		return
	}
	if !tr.published.IsZero() {
		o.m.OperationDispatchedInTrace(tr.tool, at.Sub(tr.published), tr.trace)
		tr.published = time.Time{}
	}
	o.setState(tr, claimed)
}

// Dispatched records when an attempt was handed to the transport.
func (o *Observer) Dispatched(session hostloop.SessionID, inv host.ExternalInvocation) {
	tr := o.track(session, inv.ID, inv.Tool)
	switch {
	case inv.Attempt != tr.attempt:
		tr.attempt = inv.Attempt
		tr.published = o.now()
		o.setState(tr, pending)
	case tr.published.IsZero() && tr.state != claimed:
		// A republish after a refused send: the attempt is still the
		// same one, so only its first publish time counts.
		tr.published = o.now()
	}
	o.flush()
}

// Audit turns a session's audit events into the operation, retry, stream
// and cancellation series.
func (o *Observer) Audit(session hostloop.SessionID, events []host.AuditEvent) {
	for _, e := range events {
		o.audit(session, e)
	}
	o.flush()
}

func (o *Observer) audit(session hostloop.SessionID, e host.AuditEvent) {
	if e.ID == 0 {
		return // a denied call never became an operation
	}
	if e.Outcome == host.AuditClaimed {
		tr := o.track(session, e.ID, e.Tool)
		if !tr.counted {
			tr.counted, tr.started = true, e.At
			o.m.OperationStarted(tr.tool)
		}
		if tr.state == notQueued {
			o.setState(tr, pending)
		}
		return
	}
	tr := o.lookup(session, e.ID)
	if tr == nil {
		return // a local tool, or an external one settled before its claim
	}
	switch e.Outcome {
	case host.AuditStreamed:
		o.workerSpoke(tr, e.At)
	case host.AuditStreamDenied:
		o.workerSpoke(tr, e.At)
		o.m.ChunkReceived(tr.tool, e.Bytes)
		o.m.ChunkDenied(tr.tool, e.Bytes)
	case host.AuditRetryScheduled:
		o.workerSpoke(tr, e.At)
		o.m.OperationRetried(tr.tool, retryClass(e.RetryClass))
		tr.published = time.Time{}
		o.setState(tr, pending)
	case host.AuditCancellationRequested:
		tr.cancelAsked = true
		o.m.CancellationRequested(tr.tool)
	case host.AuditSucceeded, host.AuditFailed:
		o.workerSpoke(tr, e.At)
		o.finish(session, e, tr)
	case host.AuditTimedOut:
		o.finish(session, e, tr)
	case host.AuditCancelled:
		if tr.cancelAsked {
			o.m.CancellationAnswered(tr.tool, metrics.DispositionAcknowledged)
		}
		o.finish(session, e, tr)
	}
}

func (o *Observer) finish(session hostloop.SessionID, e host.AuditEvent, tr *opTrack) {
	if tr.counted {
		o.m.OperationFinishedInTrace(tr.tool, outcome(e), e.At.Sub(tr.started), tr.trace)
	}
	o.drop(session, e.ID)
}

// Chunk counts a released chunk at both its source and released size.
func (o *Observer) Chunk(_ hostloop.SessionID, c host.ExternalToolStreamChunk) {
	o.m.ChunkReceived(c.Tool, c.SourceBytes)
	o.m.ChunkReleased(c.Tool, c.ReleasedBytes)
}

// SessionChanged counts sessions starting and ending.
func (o *Observer) SessionChanged(s hostloop.SessionStatus) {
	_, isActive := o.active[s.ID]
	_, isEnded := o.ended[s.ID]
	if !isActive && !isEnded {
		o.active[s.ID] = struct{}{}
		isActive = true
		o.m.SessionStarted()
	}
	if isActive && s.State != hostloop.SessionSuspended {
		delete(o.active, s.ID)
		delete(o.traces, s.ID)
		o.remember(s.ID)
		o.m.SessionFinished(sessionState(s.State))
		if b := overBudget(s.Err); b != "" {
			o.m.SessionOverBudget(b)
		}
	}
}

// overBudget names the budget a session's failure went over, or "".
func overBudget(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, host.ErrMemoryBudget):
		return metrics.BudgetMemory
	case errors.Is(err, host.ErrExecutionBudget):
		return metrics.BudgetExecution
	case errors.Is(err, host.ErrPendingLimit):
		return metrics.BudgetPending
	}
	return ""
}

// OperationChanged counts a cancel disposition the first time it shows,
// and forgets an operation once it has settled.
func (o *Observer) OperationChanged(session hostloop.SessionID, op hostloop.OperationStatus) {
	tr := o.lookup(session, op.ID)
	if tr == nil {
		return
	}
	d := op.CancelDisposition
	if d != "" && d != tr.disposition && d != string(protocol.CancelAcknowledged) {
		tr.disposition = d
		o.m.CancellationAnswered(tr.tool, d)
		// Only a worker holding the call answers a cancellation.
		o.workerSpoke(tr, o.now())
	}
	if op.State.Terminal() {
		o.drop(session, op.ID)
	}
	o.flush()
}

func (o *Observer) remember(id hostloop.SessionID) {
	o.ended[id] = struct{}{}
	o.endedOrder = append(o.endedOrder, id)
	if len(o.endedOrder) > keepEnded {
		delete(o.ended, o.endedOrder[0])
		o.endedOrder = o.endedOrder[1:]
	}
}

// Rejected counts a worker frame the loop refused after the transport had
// authenticated it.
func (o *Observer) Rejected(reason string, err error) {
	switch reason {
	case "publish":
		if errors.Is(err, hostloop.ErrInvocationTooLarge) {
			o.m.PublishFailed(metrics.PublishTooLarge)
		} else {
			o.m.PublishFailed(metrics.PublishRefused)
		}
	case "memory_shed":
		// Its session fails with ErrMemoryBudget: counted over budget
		// when it ends.
		o.m.SessionShed()
	case "memory_pressure":
		// No session to shed: what holds the memory is the host's own.
	case "resume", "ledger", "ledger_conflict", "max_lifetime", "reconcile", "cancel", "pump":
		// Not a worker's frame: the host's own stores and decisions,
		// counted (where they are) by ResumeFailed and the stores' own
		// metrics.
	case "unknown_request":
		o.m.FrameRejected(metrics.RejectUnknownOperation)
	case "stale_attempt":
		o.m.FrameRejected(metrics.RejectWrongAttempt)
	case "chunk":
		switch {
		case errors.Is(err, host.ErrStreamLimitExceeded):
			// Already counted as a denied chunk from its audit event.
		case errors.Is(err, host.ErrDeadlineElapsed):
			o.m.FrameRejected(metrics.RejectLate)
		default:
			o.m.FrameRejected(metrics.RejectInvalidMessage)
		}
	case "complete", "cancel_confirm", "retry":
		o.m.FrameRejected(metrics.RejectContradictory)
	case "wrong_pool":
		o.m.AuthFailure(metrics.AuthWrongPool)
	default:
		o.m.FrameRejected(metrics.RejectInvalidMessage)
	}
}

// FrameRejected counts a frame the host transport dropped; it has the
// shape of hostnats.WithRejectHandler and may run on any goroutine. The
// reasons are the hostnats.Reject… constants. A replayed sequence is counted
// as a late frame, not an authentication failure: a chunk that arrives
// after its own result lands there in normal operation, and the
// authentication alert must not fire for it.
func (o *Observer) FrameRejected(reason, _ string, _ error) {
	switch reason {
	case "bad_tag":
		o.m.AuthFailure(metrics.AuthBadTag)
	case "wrong_role":
		o.m.AuthFailure(metrics.AuthWrongRole)
	case "session_mismatch":
		o.m.AuthFailure(metrics.AuthWrongSession)
	case "sequence":
		o.m.AuthFailure(metrics.AuthSequence)
	case "unexpected_kind", "wrong_subject":
		o.m.AuthFailure(metrics.AuthWrongSubject)
	case "unknown_key":
		o.m.AuthFailure(metrics.AuthUnknownKey)
	case "wrong_pool":
		o.m.AuthFailure(metrics.AuthWrongPool)
	case "replayed":
		o.m.FrameRejected(metrics.RejectLate)
	case "invalid_message":
		o.m.FrameRejected(metrics.RejectInvalidMessage)
	default:
		o.m.FrameRejected(metrics.RejectMalformed)
	}
}

// APIAuthFailure counts a refused API request; it has the shape of
// httpapi.Config.OnAuthFailure and may run on any goroutine.
func (o *Observer) APIAuthFailure(reason string) {
	switch reason {
	case "missing_token":
		o.m.AuthFailure(metrics.AuthMissingToken)
	default:
		o.m.AuthFailure(metrics.AuthWrongToken)
	}
}

func retryClass(c host.RetryClass) string {
	if c == host.RetryRateLimited {
		return metrics.RetryRateLimited
	}
	return metrics.RetryTransient
}

// outcome maps a terminal audit event to the host's outcome label. The
// loop settles an indeterminate worker answer as a failure whose reason
// starts with "indeterminate", which is the only place it survives.
func outcome(e host.AuditEvent) string {
	switch e.Outcome {
	case host.AuditSucceeded:
		return metrics.OutcomeSucceeded
	case host.AuditTimedOut:
		return metrics.OutcomeTimedOut
	case host.AuditCancelled:
		return metrics.OutcomeCancelled
	}
	if strings.HasPrefix(e.Detail, "indeterminate") {
		return metrics.OutcomeIndeterminate
	}
	return metrics.OutcomeFailed
}

func sessionState(s hostloop.SessionState) string {
	switch s {
	case hostloop.SessionCompleted:
		return metrics.SessionCompleted
	case hostloop.SessionCancelled:
		return metrics.SessionCancelled
	}
	return metrics.SessionFailed
}
