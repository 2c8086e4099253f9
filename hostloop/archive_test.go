package hostloop

import (
	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/toolspec"

	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/internal/tooltest"
	"github.com/splashfabric/splashfabric/protocol"
)

// memArchive is an in-memory SessionArchive shared by the loops of one
// test, as the KV bucket is shared by the processes of one host.
type memArchive struct {
	mu           sync.Mutex
	records      map[SessionID]SessionStatus
	incarnations map[string]Incarnation
	// crashed drops every later Record, as a killed process loses what
	// it had not stored.
	crashed bool
	// registerErr fails Register; blockRegister makes it wait for ctx.
	registerErr   error
	blockRegister bool
	// lookupGate, when set, holds every Lookup until it is closed.
	lookupGate chan struct{}
	lookups    chan SessionID
}

func newMemArchive() *memArchive {
	return &memArchive{
		records:      map[SessionID]SessionStatus{},
		incarnations: map[string]Incarnation{},
		lookups:      make(chan SessionID, 64),
	}
}

func (m *memArchive) Register(ctx context.Context, inc Incarnation) error {
	m.mu.Lock()
	err, block := m.registerErr, m.blockRegister
	m.mu.Unlock()
	if block {
		<-ctx.Done()
		return ctx.Err()
	}
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.incarnations[inc.ID] = inc
	return nil
}

func (m *memArchive) Record(s SessionStatus) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.crashed {
		m.records[s.ID] = s
	}
}

func (m *memArchive) Lookup(ctx context.Context, id SessionID) (SessionStatus, error) {
	select {
	case m.lookups <- id:
	default:
		// Nobody watches lookups (a restarted host resuming many).
	}
	m.mu.Lock()
	gate := m.lookupGate
	m.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return SessionStatus{}, ctx.Err()
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.records[id]
	if !ok {
		return SessionStatus{}, ErrUnknownSession
	}
	return s, nil
}

func (m *memArchive) Incarnation(_ context.Context, id string) (Incarnation, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	inc, ok := m.incarnations[id]
	if !ok {
		return Incarnation{}, ErrUnknownIncarnation
	}
	return inc, nil
}

// Flush fails once the process crashed: what it recorded since is lost.
func (m *memArchive) Flush(context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.crashed {
		return errDead
	}
	return nil
}

func (m *memArchive) record(id SessionID) (SessionStatus, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.records[id]
	return s, ok
}

func (m *memArchive) crash() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.crashed = true
}

func archiveLoop(t *testing.T, tr Transport, a SessionArchive, hostID string, keep int) *Loop {
	t.Helper()
	l, err := StartLoop(LoopConfig{
		Transport:    tr,
		HostID:       hostID,
		Archive:      a,
		KeepFinished: keep,
		RetryInitial: 5 * time.Millisecond,
		Catalog:      tooltest.Catalog[*host.Runtime](t, toolspec.Spec{Name: "text.remote"}),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Stop)
	return l
}

const remoteScript = `await tool.start("text.remote", "x")`

func submit(t *testing.T, l *Loop, src string) SessionStatus {
	t.Helper()
	s, err := l.Submit(context.Background(), Submission{Source: src})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestLoopArchivesFinishedSessionsAndAnswersAfterEviction(t *testing.T) {
	tr := newChanTransport()
	a := newMemArchive()
	l := archiveLoop(t, tr, a, "h1", 1)
	done := submit(t, l, `"first"`)
	failed := submit(t, l, `throw new Error("boom")`)
	// The third finished session evicts the first two from the loop.
	submit(t, l, `"third"`)

	rec, ok := a.record(done.ID)
	if !ok || rec.State != SessionCompleted || rec.Value != "first" || rec.Operations != nil {
		t.Fatalf("record of %s = %+v, %v", done.ID, rec, ok)
	}
	tests := []struct {
		id        SessionID
		state     SessionState
		value     string
		errSubstr string
	}{
		{done.ID, SessionCompleted, "first", ""},
		{failed.ID, SessionFailed, "", "boom"},
	}
	for _, tt := range tests {
		st, audit, err := l.Status(context.Background(), tt.id)
		if err != nil {
			t.Fatalf("%s: %v", tt.id, err)
		}
		if st.State != tt.state || st.Value != tt.value || !strings.Contains(st.Error, tt.errSubstr) || audit != nil {
			t.Fatalf("%s: %+v audit %v", tt.id, st, audit)
		}
	}
	// The loop forgot them: only the archive answered.
	if len(a.lookups) < 2 {
		t.Fatalf("%d lookups, want the archive asked for both", len(a.lookups))
	}
}

func TestLoopAnswersSessionsOfEarlierIncarnations(t *testing.T) {
	a := newMemArchive()
	tr1 := newChanTransport()
	l1 := archiveLoop(t, tr1, a, "h-1", 0)
	lost := submit(t, l1, remoteScript)
	inv := next(t, tr1)
	finished := submit(t, l1, `"kept"`)
	// Submit answers in the step that ran it; the archive is handed the
	// record at that step's end, without the caller waiting for it.
	testwait.Until(t, 0, "the finished session archived", func() bool {
		_, ok := a.record(finished.ID)
		return ok
	})
	// A kill: nothing more reaches the archive.
	a.crash()
	l1.Stop()

	tr2 := newChanTransport()
	rej := &recordingObserver{}
	l2, err := StartLoop(LoopConfig{Transport: tr2, HostID: "h-1", Archive: a, Observer: rej})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Stop()
	if l2.Incarnation().ID == l1.Incarnation().ID {
		t.Fatal("incarnation reused")
	}
	inc1 := l1.Incarnation().ID
	tests := []struct {
		name    string
		id      SessionID
		state   SessionState
		wantErr error // of Status
		cause   error // of the status
	}{
		{"suspended at the kill", lost.ID, SessionFailed, nil, ErrHostRestarted},
		{"finished before the kill", finished.ID, SessionCompleted, nil, nil},
		{"number the earlier process never used", SessionID("s-" + inc1 + "-zz"), SessionFailed, nil, ErrHostRestarted},
		{"unregistered incarnation", "s-h-1-0123456789ab-1", "", ErrUnknownSession, nil},
		{"current incarnation, never used", SessionID("s-" + l2.Incarnation().ID + "-zz"), "", ErrUnknownSession, nil},
		{"another host's, not archived", SessionID("s-h-2-" + inc1[len("h-1-"):] + "-1"), "", ErrSessionElsewhere, nil},
		{"not hex", "s-h-1-0123456789xy-1", "", ErrUnknownSession, nil},
		{"no counter", SessionID("s-" + inc1 + "-"), "", ErrUnknownSession, nil},
		{"counter with a dash", SessionID("s-" + inc1 + "-1-2"), "", ErrUnknownSession, nil},
		{"counter too long", SessionID("s-" + inc1 + "-12345678901234"), "", ErrUnknownSession, nil},
		{"not a key", SessionID("s-" + inc1 + "-1.>"), "", ErrUnknownSession, nil},
		{"empty", "", "", ErrUnknownSession, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, _, err := l2.Status(context.Background(), tt.id)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if st.State != tt.state || st.ID != tt.id {
				t.Fatalf("status %+v", st)
			}
			if tt.cause != nil && (!errors.Is(st.Err, tt.cause) || st.Error != st.Err.Error() || !strings.Contains(st.Error, inc1)) {
				t.Fatalf("cause %v (%q), want %v naming %s", st.Err, st.Error, tt.cause, inc1)
			}
		})
	}

	// The lost session's call answers late: acked away as an unknown
	// request of an earlier process, never dispatched again.
	p := protocol.TextPayload("late")
	tr2.Reply(protocol.Result{RequestID: inv.RequestID, Attempt: 1, Status: protocol.ResultSucceeded, Payload: &p})
	testwait.Until(t, 0, "the late result rejected", func() bool { return rej.count() == 1 })
	if _, err := l2.Operations(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(tr2.Published()) != 0 || rej.rejs[0] != "unknown_request" {
		t.Fatalf("published %v, rejections %v", tr2.Published(), rej.rejs)
	}
}

func TestLoopStopRecordsSuspendedSessionsAsStopped(t *testing.T) {
	a := newMemArchive()
	tr1 := newChanTransport()
	l1 := archiveLoop(t, tr1, a, "h1", 0)
	s := submit(t, l1, remoteScript)
	next(t, tr1)
	l1.Stop()
	rec, ok := a.record(s.ID)
	if !ok || rec.State != SessionFailed || !errors.Is(rec.Err, ErrHostStopped) || rec.Operations != nil {
		t.Fatalf("record %+v, %v", rec, ok)
	}
	if !strings.Contains(rec.Error, "1 of the session's operations") {
		t.Fatalf("error %q does not say what was left running", rec.Error)
	}

	l2 := archiveLoop(t, newChanTransport(), a, "h1", 0)
	st, _, err := l2.Status(context.Background(), s.ID)
	if err != nil || !errors.Is(st.Err, ErrHostStopped) || errors.Is(st.Err, ErrHostRestarted) {
		t.Fatalf("status %+v, %v", st, err)
	}
}

func TestLoopDoesNotWaitOnASlowArchive(t *testing.T) {
	a := newMemArchive()
	gate := make(chan struct{})
	a.lookupGate = gate
	tr := newChanTransport()
	l := archiveLoop(t, tr, a, "h1", 0)
	inc := l.Incarnation().ID

	stuck := make(chan error, 1)
	go func() {
		_, _, err := l.Status(context.Background(), SessionID("s-"+inc+"-zz"))
		stuck <- err
	}()
	testwait.Receive(t, 0, "the lookup to reach the archive", a.lookups)
	// The loop goes on serving while the lookup waits.
	s := submit(t, l, remoteScript)
	inv := next(t, tr)
	p := protocol.TextPayload("done")
	tr.Reply(protocol.Result{RequestID: inv.RequestID, Attempt: 1, Status: protocol.ResultSucceeded, Payload: &p})
	waitState(t, l, s.ID, SessionCompleted)
	close(gate)
	if err := testwait.Receive(t, 0, "the lookup to end", stuck); !errors.Is(err, ErrUnknownSession) {
		t.Fatalf("lookup err = %v", err)
	}
}

func TestStartLoopFailsWhenTheIncarnationCannotBeRegistered(t *testing.T) {
	boom := errors.New("bucket gone")
	tests := []struct {
		name    string
		arrange func(*memArchive)
		wantErr []error
	}{
		{"refused", func(m *memArchive) { m.registerErr = boom }, []error{ErrArchiveUnavailable, boom}},
		{"too slow", func(m *memArchive) { m.blockRegister = true }, []error{ErrArchiveUnavailable, context.DeadlineExceeded}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newMemArchive()
			tt.arrange(a)
			l, err := StartLoop(LoopConfig{Transport: newChanTransport(), HostID: "h1", Archive: a, ArchiveTimeout: 20 * time.Millisecond})
			if l != nil {
				l.Stop()
				t.Fatal("loop started")
			}
			for _, w := range tt.wantErr {
				if !errors.Is(err, w) {
					t.Fatalf("err = %v, want %v", err, w)
				}
			}
			if !strings.Contains(err.Error(), "could not tell") {
				t.Fatalf("err %q does not say why registration matters", err)
			}
		})
	}
}

func TestStopFlushIsBounded(t *testing.T) {
	a := &slowFlush{memArchive: newMemArchive(), ended: make(chan error, 1)}
	l, err := StartLoop(LoopConfig{Transport: newChanTransport(), HostID: "h1", Archive: a, ArchiveTimeout: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	l.Stop()
	if err := testwait.Receive(t, 0, "the flush's end", a.ended); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("flush ended with %v", err)
	}
}

// slowFlush never finishes a flush before its context ends.
type slowFlush struct {
	*memArchive
	ended chan error
}

func (s *slowFlush) Flush(ctx context.Context) error {
	<-ctx.Done()
	s.ended <- ctx.Err()
	return ctx.Err()
}

func TestSessionIncarnation(t *testing.T) {
	tests := []struct {
		host string
		id   SessionID
		want string
	}{
		{"h1", "s-h1-0123456789ab-1", "h1-0123456789ab"},
		{"a-b", "s-a-b-0123456789ab-zz", "a-b-0123456789ab"},
		{"a", "s-a-b-0123456789ab-1", ""},
		{"h1", "s-h1-0123456789AB-1", ""},
		{"h1", "x-h1-0123456789ab-1", ""},
		{"h1", "s-h1-0123456789ab", ""},
	}
	for _, tt := range tests {
		got, ok := sessionIncarnation(tt.host, tt.id)
		if got != tt.want || ok != (tt.want != "") {
			t.Errorf("sessionIncarnation(%q, %q) = %q, %v; want %q", tt.host, tt.id, got, ok, tt.want)
		}
	}
}
