package httpapi_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/httpapi"
)

// fakeBackend stands in for a loop in tests that check the HTTP surface
// alone: sessions are kept in a map and their events are told to an
// observer the way a loop would.
type fakeBackend struct {
	obs host.Observer

	mu       sync.Mutex
	next     int
	sessions map[host.SessionID]*fakeSession
	subs     []host.Submission
}

type fakeSession struct {
	status host.SessionStatus
	audit  []host.AuditEvent
}

var t0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

func newFakeBackend(obs host.Observer) *fakeBackend {
	return &fakeBackend{obs: obs, sessions: make(map[host.SessionID]*fakeSession)}
}

// Submit refuses sources containing "unknown(" with host.ErrUnknownTool;
// every other script is suspended on one claimed "echo" operation.
func (f *fakeBackend) Submit(_ context.Context, sub host.Submission) (host.SessionStatus, error) {
	if strings.Contains(sub.Source, "unknown(") {
		return host.SessionStatus{}, fmt.Errorf("%w: %q", host.ErrUnknownTool, "unknown")
	}
	f.mu.Lock()
	f.next++
	id := host.SessionID(fmt.Sprintf("s-%d", f.next))
	st := host.SessionStatus{ID: id, State: host.SessionSuspended, Created: t0, Operations: []host.OperationStatus{{
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

func (f *fakeBackend) Status(_ context.Context, id host.SessionID) (host.SessionStatus, []host.AuditEvent, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.sessions[id]
	if s == nil {
		return host.SessionStatus{}, nil, fmt.Errorf("%w: %q", host.ErrUnknownSession, id)
	}
	return s.status, append([]host.AuditEvent(nil), s.audit...), nil
}

func (f *fakeBackend) Operations(context.Context) ([]host.OperationStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []host.OperationStatus
	for i := 1; i <= f.next; i++ {
		if s := f.sessions[host.SessionID(fmt.Sprintf("s-%d", i))]; s != nil {
			out = append(out, s.status.Operations...)
		}
	}
	return out, nil
}

// Cancel accepts the first request for a claimed operation and refuses a
// second one, as the runtime does.
func (f *fakeBackend) Cancel(_ context.Context, id host.SessionID, op host.ExternalToolID) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.sessions[id]
	if s == nil {
		return fmt.Errorf("%w: %q", host.ErrUnknownSession, id)
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
func (f *fakeBackend) chunk(id host.SessionID, index int, text string) {
	f.obs.Chunk(id, host.ExternalToolStreamChunk{ID: 1, Tool: "echo", Index: index, Text: text, SourceBytes: len(text), ReleasedBytes: len(text)})
}

// finish completes session with value, as the loop's last step would.
func (f *fakeBackend) finish(id host.SessionID, value string) {
	f.mu.Lock()
	s := f.sessions[id]
	s.status.State, s.status.Value, s.status.Operations = host.SessionCompleted, value, nil
	st := s.status
	f.mu.Unlock()
	f.obs.SessionChanged(st)
}

func sessionID(n int) host.SessionID { return host.SessionID(fmt.Sprintf("s-%d", n)) }

var _ httpapi.Backend = (*fakeBackend)(nil)
