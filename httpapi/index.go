package httpapi

import (
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/hostloop"
	"github.com/splashfabric/splashfabric/httpapi/apiwire"

	"github.com/splashfabric/splashfabric/internal/clip"
)

// Defaults for the zero values of IndexConfig.
const (
	// DefaultIndexSessions is how many sessions the index lists, newest
	// kept: as many as the loop keeps finished in memory by default.
	DefaultIndexSessions = 1024
	// DefaultIndexSourceBytes bounds the source the index keeps of one
	// session, so a thousand listed sessions hold at most 32 MiB of it.
	DefaultIndexSourceBytes = 32 << 10
	// DefaultWorkerSeenWindow is how long a worker stays listed after
	// its last frame to this host.
	DefaultWorkerSeenWindow = 5 * time.Minute
	// maxWorkersPerTool bounds the workers the index remembers per tool;
	// the oldest is let go first.
	maxWorkersPerTool = 256
)

// IndexConfig sizes a SessionIndex.
type IndexConfig struct {
	// Sessions bounds the sessions listed; zero picks
	// DefaultIndexSessions. The oldest is let go first.
	Sessions int
	// SourceBytes bounds the source kept per session; zero picks
	// DefaultIndexSourceBytes. A longer source is cut and marked.
	SourceBytes int
	// WorkerWindow is how long a worker is listed after its last frame;
	// zero picks DefaultWorkerSeenWindow.
	WorkerWindow time.Duration
	// Now is the index's clock; nil means time.Now.
	Now func() time.Time
}

// SessionIndex is a hostloop.Observer that remembers what the console
// lists and the loop does not answer for: the host's recent sessions (the
// loop looks sessions up by id only), the tools each used, the source each
// was submitted with, and the workers that answered this host. It is fed
// on the loop goroutine, so every call only updates maps under a mutex.
type SessionIndex struct {
	cfg IndexConfig

	// mu guards everything below.
	mu       sync.Mutex
	sessions map[hostloop.SessionID]*indexed
	// order is session ids oldest first, for eviction and listing.
	order   []hostloop.SessionID
	workers map[string]map[string]*workerSeen // tool -> worker
}

type indexed struct {
	status  hostloop.SessionStatus // without operations
	ops     int                    // live operations
	updated time.Time
	tools   []string // in the order first used
	source  string
	cut     bool // source was cut to SourceBytes
	sourced bool // the source was recorded (a session submitted here)
}

type workerSeen struct {
	last     time.Time
	answered uint64 // operations it ended: succeeded, failed, cancelled
}

var _ hostloop.Observer = (*SessionIndex)(nil)

// NewSessionIndex returns an empty index.
func NewSessionIndex(cfg IndexConfig) *SessionIndex {
	if cfg.Sessions <= 0 {
		cfg.Sessions = DefaultIndexSessions
	}
	if cfg.SourceBytes <= 0 {
		cfg.SourceBytes = DefaultIndexSourceBytes
	}
	if cfg.WorkerWindow <= 0 {
		cfg.WorkerWindow = DefaultWorkerSeenWindow
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &SessionIndex{
		cfg:      cfg,
		sessions: make(map[hostloop.SessionID]*indexed),
		workers:  make(map[string]map[string]*workerSeen),
	}
}

// entry returns id's entry, creating it (and letting the oldest go); mu
// must be held.
func (x *SessionIndex) entry(id hostloop.SessionID) *indexed {
	e := x.sessions[id]
	if e != nil {
		return e
	}
	e = &indexed{status: hostloop.SessionStatus{ID: id, State: hostloop.SessionSuspended}}
	x.sessions[id] = e
	x.order = append(x.order, id)
	if over := len(x.order) - x.cfg.Sessions; over > 0 {
		for _, old := range x.order[:over] {
			delete(x.sessions, old)
		}
		// Cut from the front rather than shifting every id left: append
		// moves the live ids to a new array only once the front has used
		// up the spare capacity, so letting one go is not a copy of all.
		clear(x.order[:over])
		x.order = x.order[over:]
	}
	return e
}

// submitted records the source a session was submitted with, and its
// first status (the loop may have told it already).
func (x *SessionIndex) submitted(st hostloop.SessionStatus, source string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	e := x.entry(st.ID)
	if e.updated.IsZero() {
		x.setStatus(e, st)
	}
	e.sourced = true
	e.source, e.cut = source, false
	if len(source) > x.cfg.SourceBytes {
		e.source, e.cut = clip.String(source, x.cfg.SourceBytes), true
	}
	for _, o := range st.Operations {
		e.addTool(o.Tool)
	}
}

func (x *SessionIndex) setStatus(e *indexed, st hostloop.SessionStatus) {
	ops := len(st.Operations)
	st.Operations = nil
	// The loop reports a status after every step; updated moves only
	// when something listed changed.
	if e.updated.IsZero() || e.ops != ops || e.status.State != st.State || e.status.Value != st.Value || e.status.Error != st.Error {
		e.updated = x.cfg.Now()
	}
	e.ops = ops
	e.status = st
}

func (e *indexed) addTool(tool string) {
	if tool != "" && !slices.Contains(e.tools, tool) {
		e.tools = append(e.tools, tool)
	}
}

// SessionChanged implements hostloop.Observer.
func (x *SessionIndex) SessionChanged(s hostloop.SessionStatus) {
	x.mu.Lock()
	defer x.mu.Unlock()
	e := x.entry(s.ID)
	x.setStatus(e, s)
	for _, o := range s.Operations {
		e.addTool(o.Tool)
	}
}

// OperationChanged implements hostloop.Observer: a worker named on an
// operation sent this host a frame for it, so it is alive and serves the
// operation's tool.
func (x *SessionIndex) OperationChanged(session hostloop.SessionID, op hostloop.OperationStatus) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if e := x.sessions[session]; e != nil {
		e.addTool(op.Tool)
	}
	if op.Worker == "" || op.Tool == "" {
		return
	}
	pool := x.workers[op.Tool]
	if pool == nil {
		pool = make(map[string]*workerSeen)
		x.workers[op.Tool] = pool
	}
	w := pool[op.Worker]
	if w == nil {
		if len(pool) >= maxWorkersPerTool {
			x.evictOldest(pool)
		}
		w = &workerSeen{}
		pool[op.Worker] = w
	}
	w.last = x.cfg.Now()
	// An operation reaches one of these once, with its last change.
	switch op.State {
	case host.Succeeded, host.Failed, host.Cancelled:
		w.answered++
	}
}

func (x *SessionIndex) evictOldest(pool map[string]*workerSeen) {
	var oldest string
	var at time.Time
	for id, w := range pool {
		if oldest == "" || w.last.Before(at) {
			oldest, at = id, w.last
		}
	}
	delete(pool, oldest)
}

// Chunk implements hostloop.Observer; chunks are the event stream's.
func (x *SessionIndex) Chunk(hostloop.SessionID, host.ExternalToolStreamChunk) {}

// Audit implements hostloop.Observer; the audit log is the loop's.
func (x *SessionIndex) Audit(hostloop.SessionID, []host.AuditEvent) {}

// Dispatched implements hostloop.Observer: the tool joins the session's
// tools used.
func (x *SessionIndex) Dispatched(session hostloop.SessionID, inv host.ExternalInvocation) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if e := x.sessions[session]; e != nil {
		e.addTool(inv.Tool)
	}
}

// Rejected implements hostloop.Observer; rejections belong to no session.
func (x *SessionIndex) Rejected(string, error) {}

// list returns the sessions in state (all when empty) that visible lets
// through, newest first, at most limit of them.
func (x *SessionIndex) list(state hostloop.SessionState, limit int, visible func(id hostloop.SessionID, owner string) bool) []apiwire.SessionSummary {
	x.mu.Lock()
	defer x.mu.Unlock()
	out := make([]apiwire.SessionSummary, 0, min(limit, len(x.order)))
	for i := len(x.order) - 1; i >= 0 && len(out) < limit; i-- {
		e := x.sessions[x.order[i]]
		if state != "" && e.status.State != state || !visible(x.order[i], e.status.Owner) {
			continue
		}
		out = append(out, e.summary())
	}
	return out
}

func (e *indexed) summary() apiwire.SessionSummary {
	s := sessionOf(e.status)
	return apiwire.SessionSummary{
		ID:         s.ID,
		State:      s.State,
		Value:      s.Value,
		Error:      s.Error,
		ErrorCode:  s.ErrorCode,
		Created:    s.Created,
		Updated:    e.updated.UTC(),
		Truncated:  s.Truncated,
		Tools:      append([]string{}, e.tools...),
		Operations: e.ops,
	}
}

// source returns the source id was submitted with, if the index holds it.
func (x *SessionIndex) source(id hostloop.SessionID) (apiwire.Source, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	e := x.sessions[id]
	if e == nil || !e.sourced {
		return apiwire.Source{}, false
	}
	return apiwire.Source{Session: string(id), Source: e.source, Truncated: e.cut}, true
}

// seen returns the workers that sent a frame within the window, by tool,
// most recent first; it lets go of the others.
func (x *SessionIndex) seen() map[string][]apiwire.Worker {
	x.mu.Lock()
	defer x.mu.Unlock()
	cutoff := x.cfg.Now().Add(-x.cfg.WorkerWindow)
	out := make(map[string][]apiwire.Worker, len(x.workers))
	for tool, pool := range x.workers {
		for id, w := range pool {
			if w.last.Before(cutoff) {
				delete(pool, id)
				continue
			}
			out[tool] = append(out[tool], apiwire.Worker{ID: id, LastSeen: w.last.UTC(), Answered: w.answered})
		}
		if len(pool) == 0 {
			delete(x.workers, tool)
		}
		slices.SortFunc(out[tool], func(a, b apiwire.Worker) int {
			if c := b.LastSeen.Compare(a.LastSeen); c != 0 {
				return c
			}
			return strings.Compare(a.ID, b.ID)
		})
	}
	return out
}
