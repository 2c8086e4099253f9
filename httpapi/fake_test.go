package httpapi_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/hostloop"
	"github.com/splashfabric/splashfabric/httpapi"
)

// fakeBackend stands in for a loop in tests that check the HTTP surface
// alone: sessions are kept in a map and their events are told to an
// observer the way a loop would.
type fakeBackend struct {
	obs hostloop.Observer

	mu       sync.Mutex
	next     int
	sessions map[hostloop.SessionID]*fakeSession
	subs     []hostloop.Submission
}

type fakeSession struct {
	status hostloop.SessionStatus
	audit  []host.AuditEvent
}

var t0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

func newFakeBackend(obs hostloop.Observer) *fakeBackend {
	return &fakeBackend{obs: obs, sessions: make(map[hostloop.SessionID]*fakeSession)}
}

// Submit refuses sources containing "unknown(" with host.ErrUnknownTool;
// every other script is suspended on one claimed "echo" operation.
func (f *fakeBackend) Submit(_ context.Context, sub hostloop.Submission) (hostloop.SessionStatus, error) {
	if strings.Contains(sub.Source, "unknown(") {
		return hostloop.SessionStatus{}, fmt.Errorf("%w: %q", host.ErrUnknownTool, "unknown")
	}
	f.mu.Lock()
	f.next++
	id := hostloop.SessionID(fmt.Sprintf("s-%d", f.next))
	st := hostloop.SessionStatus{ID: id, State: hostloop.SessionSuspended, Created: t0, Operations: []hostloop.OperationStatus{{
		Session: id, ID: 1, RequestID: fmt.Sprintf("r-%d", f.next), Tool: "echo",
		State: host.Claimed, Attempt: 1, Since: t0,
	}}}
	ev := host.AuditEvent{Seq: 1, At: t0, ID: 1, Tool: "echo", CallIndex: 1, Attempt: 1, Outcome: "started"}
	f.sessions[id] = &fakeSession{status: st, audit: []host.AuditEvent{ev}}
	f.subs = append(f.subs, sub)
	f.mu.Unlock()
	if f.obs != nil {
		f.obs.Audit(id, []host.AuditEvent{ev})
		f.obs.SessionChanged(st)
	}
	return st, nil
}

func (f *fakeBackend) Status(_ context.Context, id hostloop.SessionID) (hostloop.SessionStatus, []host.AuditEvent, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.sessions[id]
	if s == nil {
		return hostloop.SessionStatus{}, nil, fmt.Errorf("%w: %q", hostloop.ErrUnknownSession, id)
	}
	return s.status, append([]host.AuditEvent(nil), s.audit...), nil
}

func (f *fakeBackend) Operations(context.Context) ([]hostloop.OperationStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []hostloop.OperationStatus
	for i := 1; i <= f.next; i++ {
		if s := f.sessions[hostloop.SessionID(fmt.Sprintf("s-%d", i))]; s != nil {
			out = append(out, s.status.Operations...)
		}
	}
	return out, nil
}

// Cancel accepts the first request for a claimed operation and refuses a
// second one, as the runtime does.
func (f *fakeBackend) Cancel(_ context.Context, id hostloop.SessionID, op host.ExternalToolID) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.sessions[id]
	if s == nil {
		return fmt.Errorf("%w: %q", hostloop.ErrUnknownSession, id)
	}
	for i := range s.status.Operations {
		o := &s.status.Operations[i]
		if o.ID != op {
			continue
		}
		if o.State == host.CancellationRequested {
			return fmt.Errorf("%w: %s", host.ErrCancellationRequested, op)
		}
		o.State = host.CancellationRequested
		return nil
	}
	return fmt.Errorf("%w: %s", host.ErrUnknownOperation, op)
}

// chunk reports a chunk of session's operation 1 to the observer.
func (f *fakeBackend) chunk(id hostloop.SessionID, index int, text string) {
	f.obs.Chunk(id, host.ExternalToolStreamChunk{ID: 1, Tool: "echo", Index: index, Text: text, SourceBytes: len(text), ReleasedBytes: len(text)})
}

// finish completes session with value, as the loop's last step would.
func (f *fakeBackend) finish(id hostloop.SessionID, value string) {
	f.mu.Lock()
	s := f.sessions[id]
	s.status.State, s.status.Value, s.status.Operations = hostloop.SessionCompleted, value, nil
	st := s.status
	f.mu.Unlock()
	f.obs.SessionChanged(st)
}

func sessionID(n int) hostloop.SessionID { return hostloop.SessionID(fmt.Sprintf("s-%d", n)) }

var _ httpapi.Backend = (*fakeBackend)(nil)

// CancelSession ends a fake session cancelled.
func (f *fakeBackend) CancelSession(_ context.Context, id hostloop.SessionID, _ bool) (hostloop.SessionStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.sessions[id]
	if !ok {
		return hostloop.SessionStatus{}, fmt.Errorf("%w: %s", hostloop.ErrUnknownSession, id)
	}
	if s.status.State.Terminal() {
		return s.status, fmt.Errorf("%w: %s", hostloop.ErrSessionEnded, id)
	}
	s.status.State, s.status.Operations = hostloop.SessionCancelled, nil
	return s.status, nil
}

// ReconcileSession counts a fake session's operations.
func (f *fakeBackend) ReconcileSession(_ context.Context, id hostloop.SessionID) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.sessions[id]
	if !ok {
		return 0, fmt.Errorf("%w: %s", hostloop.ErrUnknownSession, id)
	}
	return len(s.status.Operations), nil
}
