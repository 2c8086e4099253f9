package hosttrace

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/hostloop"
	"github.com/splashfabric/splashfabric/tracing"
)

// ScopeName is the instrumentation scope of the host's spans.
const ScopeName = "github.com/splashfabric/splashfabric/hosttrace"

// Observer builds the spans of a host loop's sessions. Every method runs on
// the loop goroutine (hostloop.Observer's contract), so its maps are not
// locked.
type Observer struct {
	tracer trace.Tracer
	now    func() time.Time

	// sessions holds every session the loop took on and that has not
	// ended with all its operations.
	sessions map[hostloop.SessionID]*sessionSpan
}

var (
	_ hostloop.Observer        = (*Observer)(nil)
	_ hostloop.StartObserver   = (*Observer)(nil)
	_ hostloop.PublishObserver = (*Observer)(nil)
)

// New returns an Observer whose spans come from tp. Give tp
// tracing.NewIDGenerator so that resumed sessions stay one tree.
func New(tp trace.TracerProvider) *Observer {
	return &Observer{
		tracer:   tp.Tracer(ScopeName),
		now:      time.Now,
		sessions: make(map[hostloop.SessionID]*sessionSpan),
	}
}

// sessionSpan is one session's span and its live operations.
type sessionSpan struct {
	id   hostloop.SessionID
	ctx  context.Context // holds span
	span trace.Span
	// replay: the session was resumed and its first audit, the replay of
	// its ledger, is still to come.
	replay bool
	ended  bool
	ops    map[host.ExternalToolID]*opSpan
}

// opSpan is one operation's span and its current attempt's.
type opSpan struct {
	tool    string
	request string
	ctx     context.Context // holds span
	span    trace.Span
	attempt uint32
	att     trace.Span // the current attempt's, nil between attempts
	attCtx  context.Context
	backoff trace.Span // a retry's wait, nil when none
	// worker is the last worker the loop heard from about the operation;
	// spoke: one spoke for the current attempt (a chunk), so a worker
	// the loop reports now is this attempt's, not the last one's.
	worker string
	spoke  bool
	cancel string // the last cancel disposition seen
}

// SessionStarted starts the session's span, in the trace its submission
// named (a new trace when it named none).
func (o *Observer) SessionStarted(s hostloop.SessionStatus) {
	if o.sessions[s.ID] != nil {
		return
	}
	ctx := context.Background()
	var id trace.SpanID
	if sc, err := tracing.ParseTraceParent(s.Trace); err == nil {
		ctx = trace.ContextWithRemoteSpanContext(ctx, sc)
		id = tracing.DerivedSpanID(sc.TraceID(), "session/"+string(s.ID))
	}
	start := s.Created
	if start.IsZero() {
		start = o.now()
	}
	attrs := []attribute.KeyValue{tracing.AttrSession.String(string(s.ID))}
	if s.Resumed {
		attrs = append(attrs, tracing.AttrResumed.Bool(true))
	}
	ctx, span := tracing.StartWithID(ctx, o.tracer, id, "session", trace.WithTimestamp(start), trace.WithAttributes(attrs...))
	o.sessions[s.ID] = &sessionSpan{id: s.ID, ctx: ctx, span: span, replay: s.Resumed, ops: make(map[host.ExternalToolID]*opSpan)}
}

// SessionChanged ends the session's span once the session ends.
func (o *Observer) SessionChanged(s hostloop.SessionStatus) {
	ss := o.sessions[s.ID]
	if ss == nil || ss.ended || !s.State.Terminal() {
		return
	}
	ss.ended = true
	ss.span.SetAttributes(tracing.AttrState.String(string(s.State)))
	if s.State == hostloop.SessionFailed {
		ss.span.SetStatus(codes.Error, string(s.State))
	}
	ss.span.End(trace.WithTimestamp(o.now()))
	o.release(ss)
}

// release forgets an ended session once no operation of it is live (a
// dropped promise's call may outlive its script).
func (o *Observer) release(ss *sessionSpan) {
	if ss.ended && len(ss.ops) == 0 {
		delete(o.sessions, ss.id)
	}
}

// Audit turns the session's audit events into operation spans and their
// events. A resumed session's first batch is its replay: of it only the
// operations still live are taken, from the times the ledger kept.
func (o *Observer) Audit(session hostloop.SessionID, events []host.AuditEvent) {
	ss := o.sessions[session]
	if ss == nil {
		return
	}
	if ss.replay {
		ss.replay = false
		o.replayed(ss, events)
		return
	}
	for _, e := range events {
		o.audit(ss, e)
	}
}

// replayed opens the spans of the operations a resumed session's replay
// left live, under the ids and from the claims of the first process.
func (o *Observer) replayed(ss *sessionSpan, events []host.AuditEvent) {
	claimed := make(map[host.ExternalToolID]host.AuditEvent)
	for _, e := range events {
		switch {
		case e.ID == 0:
		case e.Outcome == host.AuditClaimed:
			claimed[e.ID] = e
		case terminal(e.Outcome):
			delete(claimed, e.ID)
		}
	}
	for _, e := range claimed {
		op := o.openOp(ss, e.ID, e.Tool, e.CallIndex, e.At)
		op.span.SetAttributes(tracing.AttrResumed.Bool(true))
	}
}

func (o *Observer) audit(ss *sessionSpan, e host.AuditEvent) {
	if e.ID == 0 {
		return // a denied call never became an operation
	}
	if e.Outcome == host.AuditClaimed {
		o.openOp(ss, e.ID, e.Tool, e.CallIndex, e.At)
		return
	}
	op := ss.ops[e.ID]
	if op == nil {
		return // a local tool's
	}
	at := trace.WithTimestamp(e.At)
	switch e.Outcome {
	case host.AuditRetryScheduled:
		class := "transient"
		if e.RetryClass == host.RetryRateLimited {
			class = "rate_limited"
		}
		o.endAttempt(op, "retry", e.At, attribute.String("splash.retry.class", class))
		_, op.backoff = o.tracer.Start(op.ctx, "retry backoff", at, trace.WithAttributes(
			tracing.AttrTool.String(op.tool), tracing.AttrAttempt.Int64(int64(e.Attempt)), attribute.String("splash.retry.class", class)))
	case host.AuditStreamDenied:
		if op.att != nil {
			op.att.AddEvent("chunk denied", at, trace.WithAttributes(tracing.AttrBytes.Int(e.Bytes)))
		}
	case host.AuditCancellationRequested:
		op.span.AddEvent("cancellation requested", at)
		if op.att != nil {
			op.att.AddEvent("cancellation requested", at)
		}
	case host.AuditLateResult, host.AuditReconciled:
		op.span.AddEvent(string(e.Outcome), at, trace.WithAttributes(tracing.AttrAttempt.Int64(int64(e.Attempt))))
	default:
		if terminal(e.Outcome) {
			o.closeOp(ss, e.ID, op, string(e.Outcome), e.At)
		}
	}
}

// openOp starts an operation's span, once.
func (o *Observer) openOp(ss *sessionSpan, id host.ExternalToolID, tool string, call uint64, at time.Time) *opSpan {
	if op := ss.ops[id]; op != nil {
		return op
	}
	var sid trace.SpanID
	if sc := ss.span.SpanContext(); sc.IsValid() {
		sid = tracing.DerivedSpanID(sc.TraceID(), "operation/"+string(ss.id)+"/"+id.String())
	}
	ctx, span := tracing.StartWithID(ss.ctx, o.tracer, sid, "operation "+tool, trace.WithTimestamp(at), trace.WithAttributes(
		tracing.AttrSession.String(string(ss.id)), tracing.AttrOperation.String(id.String()), tracing.AttrTool.String(tool), tracing.AttrCallIndex.Int64(int64(call))))
	op := &opSpan{tool: tool, ctx: ctx, span: span}
	ss.ops[id] = op
	return op
}

// closeOp ends an operation, its attempt and any wait, with outcome.
func (o *Observer) closeOp(ss *sessionSpan, id host.ExternalToolID, op *opSpan, outcome string, at time.Time) {
	o.endAttempt(op, outcome, at)
	if op.backoff != nil {
		op.backoff.End(trace.WithTimestamp(at))
		op.backoff = nil
	}
	op.span.SetAttributes(tracing.AttrOutcome.String(outcome))
	if outcome == string(host.AuditFailed) || outcome == string(host.AuditTimedOut) {
		op.span.SetStatus(codes.Error, outcome)
	}
	op.span.End(trace.WithTimestamp(at))
	delete(ss.ops, id)
	o.release(ss)
}

// endAttempt ends the current attempt's span with outcome.
func (o *Observer) endAttempt(op *opSpan, outcome string, at time.Time, attrs ...attribute.KeyValue) {
	if op.att == nil {
		return
	}
	op.att.SetAttributes(append(attrs, tracing.AttrOutcome.String(outcome))...)
	if outcome == string(host.AuditFailed) || outcome == string(host.AuditTimedOut) {
		op.att.SetStatus(codes.Error, outcome)
	}
	op.att.End(trace.WithTimestamp(at))
	op.att, op.attCtx = nil, nil
}

// Publishing starts the attempt's span (once per attempt, however often
// its send is tried) and returns ctx holding it, for the transport to
// carry to the worker.
func (o *Observer) Publishing(ctx context.Context, session hostloop.SessionID, requestID string, inv host.ExternalInvocation) context.Context {
	ss := o.sessions[session]
	if ss == nil {
		return ctx
	}
	if !ss.span.IsRecording() {
		// Not sampled: the workers are told so, and follow.
		return trace.ContextWithSpanContext(ctx, ss.span.SpanContext())
	}
	op := ss.ops[inv.ID]
	if op == nil {
		// Its claim was not seen (a resumed session whose replay the
		// runtime's audit bound cut short).
		op = o.openOp(ss, inv.ID, inv.Tool, inv.CallIndex, o.now())
	}
	if op.request == "" {
		op.request = requestID
		op.span.SetAttributes(tracing.AttrRequest.String(requestID))
	}
	if op.att != nil && op.attempt == inv.Attempt {
		return trace.ContextWithSpan(ctx, op.att)
	}
	now := o.now()
	o.endAttempt(op, "superseded", now)
	if op.backoff != nil {
		op.backoff.End(trace.WithTimestamp(now))
		op.backoff = nil
	}
	subject, _ := fabric.InvokeSubject(inv.Tool)
	op.attempt, op.spoke = inv.Attempt, false
	op.attCtx, op.att = o.tracer.Start(op.ctx, "attempt "+inv.Tool, trace.WithTimestamp(now),
		trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(
			tracing.AttrTool.String(inv.Tool), tracing.AttrOperation.String(inv.ID.String()), tracing.AttrRequest.String(requestID),
			tracing.AttrAttempt.Int64(int64(inv.Attempt)),
			attribute.String("messaging.system", "nats"), attribute.String("messaging.destination.name", subject)))
	return trace.ContextWithSpan(ctx, op.att)
}

// Dispatched marks the attempt handed to the transport.
func (o *Observer) Dispatched(session hostloop.SessionID, inv host.ExternalInvocation) {
	if op := o.op(session, inv.ID); op != nil && op.att != nil && op.attempt == inv.Attempt {
		op.att.AddEvent("published", trace.WithTimestamp(o.now()))
	}
}

// OperationChanged notes the worker that answered for the attempt and the
// dispositions of cancellation requests.
func (o *Observer) OperationChanged(session hostloop.SessionID, st hostloop.OperationStatus) {
	op := o.op(session, st.ID)
	if op == nil {
		return
	}
	if st.Worker != "" && (st.Worker != op.worker || op.spoke) {
		op.worker, op.spoke = st.Worker, false
		if op.att != nil {
			op.att.SetAttributes(tracing.AttrWorker.String(st.Worker))
		}
	}
	if d := st.CancelDisposition; d != "" && d != op.cancel {
		op.cancel = d
		attrs := trace.WithAttributes(attribute.String("splash.cancel.disposition", d))
		op.span.AddEvent("cancel answered", trace.WithTimestamp(o.now()), attrs)
		if op.att != nil {
			op.att.AddEvent("cancel answered", trace.WithTimestamp(o.now()), attrs)
		}
	}
	if st.State.Terminal() {
		// Settled without a terminal audit event reaching here (its
		// audit was cut by the runtime's bound).
		if ss := o.sessions[session]; ss != nil {
			o.closeOp(ss, st.ID, op, string(st.State), o.now())
		}
	}
}

// Chunk records a released chunk on the attempt that streamed it: its
// index and sizes, never its text.
func (o *Observer) Chunk(session hostloop.SessionID, c host.ExternalToolStreamChunk) {
	if op := o.op(session, c.ID); op != nil && op.att != nil {
		op.spoke = true
		op.att.AddEvent("chunk", trace.WithTimestamp(o.now()), trace.WithAttributes(
			attribute.Int("splash.chunk.index", c.Index),
			attribute.Int("splash.chunk.source_bytes", c.SourceBytes),
			attribute.Int("splash.chunk.released_bytes", c.ReleasedBytes)))
	}
}

// Rejected is not traced: a refused frame belongs to no span the host
// trusts.
func (o *Observer) Rejected(string, error) {}

func (o *Observer) op(session hostloop.SessionID, id host.ExternalToolID) *opSpan {
	if ss := o.sessions[session]; ss != nil {
		return ss.ops[id]
	}
	return nil
}

// terminal reports an audit outcome that ends an operation.
func terminal(out host.AuditOutcome) bool {
	switch out {
	case host.AuditSucceeded, host.AuditFailed, host.AuditTimedOut, host.AuditCancelled:
		return true
	}
	return false
}
