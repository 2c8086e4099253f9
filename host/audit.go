package host

import "time"

// AuditOutcome names one transition or decision in the audit log.
type AuditOutcome string

// Audit outcomes.
const (
	AuditStarted               AuditOutcome = "started"
	AuditDenied                AuditOutcome = "denied"
	AuditClaimed               AuditOutcome = "claimed"
	AuditRetryScheduled        AuditOutcome = "retry_scheduled"
	AuditStreamed              AuditOutcome = "streamed"
	AuditStreamDenied          AuditOutcome = "stream_denied"
	AuditCancellationRequested AuditOutcome = "cancellation_requested"
	AuditCancelled             AuditOutcome = "cancelled"
	AuditSucceeded             AuditOutcome = "succeeded"
	AuditFailed                AuditOutcome = "failed"
	AuditTimedOut              AuditOutcome = "timed_out"
	// AuditLateResult records a result that arrived after the deadline;
	// a timed_out event follows it.
	AuditLateResult AuditOutcome = "late_result"
	// AuditReconciled records a reconciliation that left the operation
	// pending (running or unknown); Detail holds the worker's state.
	AuditReconciled AuditOutcome = "reconciled"
)

// AuditEvent is one entry of the audit log. It never holds tool input,
// output or chunk text: Bytes counts them instead.
type AuditEvent struct {
	Seq        uint64
	At         time.Time
	ID         ExternalToolID // zero for a denied call that never became an operation
	Tool       string
	CallIndex  uint64
	Attempt    uint32
	Outcome    AuditOutcome
	Detail     string
	Bytes      int
	RetryClass RetryClass
}

// auditLog is a bounded ring of events between drains. While not full it
// is a plain slice from index 0; once full the oldest event is
// overwritten and counted as dropped.
type auditLog struct {
	buf     []AuditEvent
	start   int
	limit   int
	seq     uint64
	dropped uint64
}

func (l *auditLog) add(e AuditEvent) {
	l.seq++
	e.Seq = l.seq
	if len(l.buf) < l.limit {
		l.buf = append(l.buf, e)
		return
	}
	l.buf[l.start] = e
	l.start = (l.start + 1) % l.limit
	l.dropped++
}

func (l *auditLog) copyOut() []AuditEvent {
	return l.appendTo(make([]AuditEvent, 0, len(l.buf)))
}

// appendTo appends the retained events to dst, oldest first.
func (l *auditLog) appendTo(dst []AuditEvent) []AuditEvent {
	dst = append(dst, l.buf[l.start:]...)
	return append(dst, l.buf[:l.start]...)
}

// reset empties the log, keeping its buffer.
func (l *auditLog) reset() {
	clear(l.buf)
	l.buf = l.buf[:0]
	l.start = 0
}

func (r *Runtime) record(op *operation, o AuditOutcome, detail string, n int, class RetryClass) {
	r.audit.add(AuditEvent{
		At: r.clock.Now(), ID: op.id, Tool: op.tool.policy.Name, CallIndex: op.callIndex,
		Attempt: op.attempt, Outcome: o, Detail: detail, Bytes: n, RetryClass: class,
	})
}

func (r *Runtime) recordTool(tool string, o AuditOutcome, detail string) {
	r.audit.add(AuditEvent{At: r.clock.Now(), Tool: tool, Outcome: o, Detail: detail})
}

// Audit returns a copy of the retained audit log, oldest first.
func (r *Runtime) Audit() []AuditEvent { return r.audit.copyOut() }

// DrainAudit returns the retained audit log and empties it; the host Loop
// drains after every step, so the bound (Config.AuditLimit) only matters
// to hosts that never drain.
func (r *Runtime) DrainAudit() []AuditEvent {
	out := r.audit.copyOut()
	r.audit.reset()
	return out
}

// DrainAuditTo is DrainAudit appending to dst and returning the extended
// slice: a host that keeps its sessions' audit appends to what it keeps
// instead of copying every step's events twice.
func (r *Runtime) DrainAuditTo(dst []AuditEvent) []AuditEvent {
	dst = r.audit.appendTo(dst)
	r.audit.reset()
	return dst
}

// AuditDropped returns how many events the bounded log has discarded.
func (r *Runtime) AuditDropped() uint64 { return r.audit.dropped }
