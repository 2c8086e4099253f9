package httpapi

import (
	"sync"
	"time"

	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/hostloop"
	"github.com/splashfabric/splashfabric/httpapi/apiwire"
)

// Defaults for the zero values of TimelineConfig.
const (
	// DefaultTimelineSessions is how many sessions keep their timeline,
	// the newest kept: as many as the index lists.
	DefaultTimelineSessions = DefaultIndexSessions
	// DefaultTimelineOperations bounds the operations one timeline
	// draws; the rest are counted.
	DefaultTimelineOperations = 500
	// DefaultTimelineMarks bounds the marks (chunks, retries, cancel
	// requests) of one operation; the rest are counted.
	DefaultTimelineMarks = 200
)

// TimelineConfig sizes a Timelines.
type TimelineConfig struct {
	Sessions   int
	Operations int
	Marks      int
	// Now is the clock of what the loop reports without a time (a
	// publish); nil is time.Now.
	Now func() time.Time
}

// Timelines is a hostloop.Observer that keeps, for each recent session,
// what happened to its operations and when: each one's claim, each
// attempt's publish, the first frame a worker sent for it and its end,
// the chunks, retries and cancellation requests between, and how it
// ended, which GET /v1/sessions/{id}/timeline serves and the console
// draws. Times of audit events are the loop's; a publish's is the
// observer's clock. It is fed on the loop goroutine, so every call only
// updates maps under a mutex; memory is bounded by the config.
type Timelines struct {
	cfg TimelineConfig

	// mu guards everything below.
	mu       sync.Mutex
	sessions map[hostloop.SessionID]*timeline
	order    []hostloop.SessionID
}

var (
	_ hostloop.Observer      = (*Timelines)(nil)
	_ hostloop.StartObserver = (*Timelines)(nil)
)

type timeline struct {
	created time.Time
	ended   time.Time
	ops     map[host.ExternalToolID]*opTimeline
	order   []*opTimeline
	dropped int
}

type opTimeline struct {
	id       host.ExternalToolID
	tool     string
	claimed  time.Time
	ended    time.Time
	outcome  string
	attempts []*attemptTimeline
	marks    []apiwire.TimelineMark
	// dropped counts the marks over the bound.
	dropped int
}

type attemptTimeline struct {
	n                           uint32
	published, firstFrame, ends time.Time
	outcome, worker             string
}

// NewTimelines returns an empty Timelines.
func NewTimelines(cfg TimelineConfig) *Timelines {
	if cfg.Sessions <= 0 {
		cfg.Sessions = DefaultTimelineSessions
	}
	if cfg.Operations <= 0 {
		cfg.Operations = DefaultTimelineOperations
	}
	if cfg.Marks <= 0 {
		cfg.Marks = DefaultTimelineMarks
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Timelines{cfg: cfg, sessions: make(map[hostloop.SessionID]*timeline)}
}

// SessionStarted opens the session's timeline.
func (x *Timelines) SessionStarted(s hostloop.SessionStatus) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.sessions[s.ID] != nil {
		return
	}
	x.sessions[s.ID] = &timeline{created: s.Created, ops: make(map[host.ExternalToolID]*opTimeline)}
	x.order = append(x.order, s.ID)
	if over := len(x.order) - x.cfg.Sessions; over > 0 {
		for _, old := range x.order[:over] {
			delete(x.sessions, old)
		}
		clear(x.order[:over])
		x.order = x.order[over:]
	}
}

// SessionChanged marks the session's end.
func (x *Timelines) SessionChanged(s hostloop.SessionStatus) {
	if !s.State.Terminal() {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if tl := x.sessions[s.ID]; tl != nil && tl.ended.IsZero() {
		tl.ended = x.cfg.Now()
	}
}

// Audit records claims, chunks, retries, cancellation requests and ends.
func (x *Timelines) Audit(session hostloop.SessionID, events []host.AuditEvent) {
	x.mu.Lock()
	defer x.mu.Unlock()
	tl := x.sessions[session]
	if tl == nil {
		return
	}
	for _, e := range events {
		if e.ID == 0 {
			continue
		}
		if e.Outcome == host.AuditClaimed {
			if tl.ops[e.ID] == nil {
				if len(tl.order) >= x.cfg.Operations {
					tl.dropped++
					continue
				}
				op := &opTimeline{id: e.ID, tool: e.Tool, claimed: e.At}
				tl.ops[e.ID] = op
				tl.order = append(tl.order, op)
			}
			continue
		}
		op := tl.ops[e.ID]
		if op == nil {
			continue
		}
		switch e.Outcome {
		case host.AuditStreamed, host.AuditStreamDenied:
			op.attempt(e.Attempt).spoke(e.At)
			x.mark(op, apiwire.TimelineMark{At: e.At, Kind: markKind(e.Outcome), Attempt: e.Attempt, Bytes: e.Bytes})
		case host.AuditRetryScheduled:
			// The event names the attempt to come; the one that
			// asked for it ends here.
			a := op.attempt(e.Attempt - 1)
			a.spoke(e.At)
			a.ends, a.outcome = e.At, "retry"
			x.mark(op, apiwire.TimelineMark{At: e.At, Kind: "retry_scheduled", Attempt: e.Attempt - 1})
		case host.AuditCancellationRequested, host.AuditLateResult, host.AuditReconciled:
			x.mark(op, apiwire.TimelineMark{At: e.At, Kind: string(e.Outcome), Attempt: e.Attempt})
		case host.AuditSucceeded, host.AuditFailed, host.AuditTimedOut, host.AuditCancelled:
			op.ended, op.outcome = e.At, string(e.Outcome)
			if n := len(op.attempts); n > 0 && op.attempts[n-1].ends.IsZero() {
				a := op.attempts[n-1]
				if e.Outcome != host.AuditTimedOut {
					a.spoke(e.At)
				}
				a.ends, a.outcome = e.At, string(e.Outcome)
			}
		}
	}
}

// markKind names a stream event's mark.
func markKind(o host.AuditOutcome) string {
	if o == host.AuditStreamDenied {
		return "chunk_denied"
	}
	return "chunk"
}

func (x *Timelines) mark(op *opTimeline, m apiwire.TimelineMark) {
	if len(op.marks) >= x.cfg.Marks {
		op.dropped++
		return
	}
	op.marks = append(op.marks, m)
}

// attempt returns op's attempt n, making it (and any before it) if new.
func (op *opTimeline) attempt(n uint32) *attemptTimeline {
	for _, a := range op.attempts {
		if a.n == n {
			return a
		}
	}
	a := &attemptTimeline{n: n}
	op.attempts = append(op.attempts, a)
	return a
}

// spoke notes the first frame of a worker for the attempt.
func (a *attemptTimeline) spoke(at time.Time) {
	if a.firstFrame.IsZero() {
		a.firstFrame = at
	}
}

// Dispatched records an attempt's publish.
func (x *Timelines) Dispatched(session hostloop.SessionID, inv host.ExternalInvocation) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if tl := x.sessions[session]; tl != nil {
		if op := tl.ops[inv.ID]; op != nil {
			if a := op.attempt(inv.Attempt); a.published.IsZero() {
				a.published = x.cfg.Now()
			}
		}
	}
}

// OperationChanged records the worker that answered for the current
// attempt.
func (x *Timelines) OperationChanged(session hostloop.SessionID, st hostloop.OperationStatus) {
	if st.Worker == "" {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if tl := x.sessions[session]; tl != nil {
		if op := tl.ops[st.ID]; op != nil {
			if n := len(op.attempts); n > 0 && op.attempts[n-1].n == st.Attempt && !op.attempts[n-1].firstFrame.IsZero() {
				op.attempts[n-1].worker = st.Worker
			}
		}
	}
}

// Chunk is recorded from the audit's stream events.
func (x *Timelines) Chunk(hostloop.SessionID, host.ExternalToolStreamChunk) {}

// Rejected is not part of any timeline.
func (x *Timelines) Rejected(string, error) {}

// timeline returns session id's timeline as the API serves it, and
// whether one is kept.
func (x *Timelines) timeline(id hostloop.SessionID) (apiwire.Timeline, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	tl := x.sessions[id]
	if tl == nil {
		return apiwire.Timeline{Session: string(id), Operations: []apiwire.TimelineOperation{}}, false
	}
	out := apiwire.Timeline{Session: string(id), Created: tl.created.UTC(), Ended: timePtr(tl.ended), Recorded: true,
		Operations: make([]apiwire.TimelineOperation, 0, len(tl.order)), OperationsDropped: tl.dropped}
	for _, op := range tl.order {
		o := apiwire.TimelineOperation{
			ID: op.id.String(), Tool: op.tool, Claimed: op.claimed.UTC(), Ended: timePtr(op.ended), Outcome: op.outcome,
			Attempts: make([]apiwire.TimelineAttempt, 0, len(op.attempts)), Marks: append([]apiwire.TimelineMark{}, op.marks...), MarksDropped: op.dropped,
		}
		for _, a := range op.attempts {
			o.Attempts = append(o.Attempts, apiwire.TimelineAttempt{Attempt: a.n, Published: timePtr(a.published), FirstFrame: timePtr(a.firstFrame),
				Ended: timePtr(a.ends), Outcome: a.outcome, Worker: a.worker})
		}
		for i := range o.Marks {
			o.Marks[i].At = o.Marks[i].At.UTC()
		}
		out.Operations = append(out.Operations, o)
	}
	return out, true
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}
