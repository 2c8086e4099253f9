package main

import (
	"log/slog"
	"sync"
	"time"

	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/hostloop"
	"github.com/splashfabric/splashfabric/internal/ratelog"
)

// resumeLog writes the host's resumption to its log: when it starts
// bringing sessions back, how it goes (at most every few seconds), when it
// is done, and each session that could not be resumed (at a bounded
// rate). It observes nothing else.
type resumeLog struct {
	log      *slog.Logger
	failures *ratelog.Limiter

	mu       sync.Mutex
	peak     int
	started  time.Time
	lastNote time.Time
}

// resumeNoteEvery bounds how often progress is logged.
const resumeNoteEvery = 5 * time.Second

func newResumeLog(log *slog.Logger) *resumeLog {
	return &resumeLog{log: log, failures: ratelog.New(log, time.Second, 5)}
}

var (
	_ hostloop.Observer       = (*resumeLog)(nil)
	_ hostloop.ResumeObserver = (*resumeLog)(nil)
)

func (r *resumeLog) Resuming(pending int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	switch {
	case pending > 0 && r.peak == 0:
		r.peak, r.started, r.lastNote = pending, now, now
		r.log.Info("resuming durable sessions", "pending", pending)
	case pending == 0 && r.peak > 0:
		r.log.Info("durable sessions resumed", "sessions", r.peak, "took", now.Sub(r.started).Round(time.Millisecond))
		r.peak = 0
	case pending > 0:
		r.peak = max(r.peak, pending)
		if now.Sub(r.lastNote) >= resumeNoteEvery {
			r.lastNote = now
			r.log.Info("resuming durable sessions", "pending", pending, "of", r.peak)
		}
	}
}

func (r *resumeLog) ResumeFailed(reason string, session hostloop.SessionID, err error) {
	r.failures.Warn(reason, "durable session not resumed", "reason", reason, "session", string(session), "err", err)
}

func (*resumeLog) SessionChanged(hostloop.SessionStatus)                         {}
func (*resumeLog) OperationChanged(hostloop.SessionID, hostloop.OperationStatus) {}
func (*resumeLog) Chunk(hostloop.SessionID, host.ExternalToolStreamChunk)        {}
func (*resumeLog) Audit(hostloop.SessionID, []host.AuditEvent)                   {}
func (*resumeLog) Dispatched(hostloop.SessionID, host.ExternalInvocation)        {}
func (*resumeLog) Rejected(string, error)                                        {}
