package hostnats_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/hostloop"
	"github.com/splashfabric/splashfabric/hostnats"
	"github.com/splashfabric/splashfabric/internal/fabrictest"
	"github.com/splashfabric/splashfabric/internal/natstest"
	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/internal/tooltest"
	"github.com/splashfabric/splashfabric/toolspec"
)

// errorLog collects what an archive reports to WithErrorHandler.
type errorLog struct {
	mu   sync.Mutex
	errs []error
}

func (e *errorLog) add(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.errs = append(e.errs, err)
}

func (e *errorLog) count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.errs)
}

func newArchive(t *testing.T, env *fabrictest.Env, opts ...hostnats.Option) *hostnats.SessionArchive {
	t.Helper()
	a, err := hostnats.NewSessionArchive(fabrictest.Ctx(t), env.NC, env.Cfg, fabrictest.Key, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	return a
}

// sessionBucket opens the archive's bucket directly, to see what it stores.
func sessionBucket(t *testing.T, env *fabrictest.Env) jetstream.KeyValue {
	t.Helper()
	kv, err := env.JS.KeyValue(fabrictest.Ctx(t), fabric.BucketSessions)
	if err != nil {
		t.Fatal(err)
	}
	return kv
}

func sessionBucketStatus(t *testing.T, env *fabrictest.Env) jetstream.KeyValueStatus {
	t.Helper()
	st, err := sessionBucket(t, env).Status(fabrictest.Ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	return st
}

var created = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

func TestSessionArchiveStoresAndAnswers(t *testing.T) {
	env := fabrictest.NewEnv(t)
	a := newArchive(t, env)
	ctx := fabrictest.Ctx(t)
	inc := hostloop.Incarnation{ID: "h1-0123456789ab", HostID: "h1", Started: created}
	if err := a.Register(ctx, inc); err != nil {
		t.Fatal(err)
	}
	stopped := fmt.Errorf("%w: 1 operation left", hostloop.ErrHostStopped)
	records := []hostloop.SessionStatus{
		{ID: "s-h1-0123456789ab-1", State: hostloop.SessionCompleted, Value: `{"n":1}`, Created: created,
			Trace: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
		{ID: "s-h1-0123456789ab-2", State: hostloop.SessionFailed, Err: stopped, Error: "stopped: 1 operation left", Created: created},
		{ID: "s-h1-0123456789ab-3", State: hostloop.SessionFailed, Err: errors.New("Error: boom"), Error: "Error: boom", Created: created},
		{ID: "s-h1-0123456789ab-4", State: hostloop.SessionFailed, Err: fmt.Errorf("script failed: %w", host.ErrMemoryBudget), Error: "script failed: memory budget exceeded", Created: created},
		{ID: "s-h1-0123456789ab-5", State: hostloop.SessionFailed, Err: fmt.Errorf("%w: its submitter left", hostloop.ErrSubmissionWithdrawn), Error: "withdrawn: its submitter left", Created: created},
	}
	for _, r := range records {
		a.Record(r)
	}
	if err := a.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if st := a.Stats(); st.Recorded != 5 || st.Stored != 5 || st.Failed+st.Dropped+st.Truncated != 0 {
		t.Fatalf("stats %+v", st)
	}
	// A second archive has no memory of the writes: it reads the bucket,
	// as the next host process does.
	b := newArchive(t, env)
	for _, want := range records {
		got, err := b.Lookup(ctx, want.ID)
		if err != nil {
			t.Fatalf("%s: %v", want.ID, err)
		}
		if got.ID != want.ID || got.State != want.State || got.Value != want.Value || got.Error != want.Error || !got.Created.Equal(created) || got.Truncated || got.Trace != want.Trace {
			t.Fatalf("%s: got %+v", want.ID, got)
		}
		if (want.Err == nil) != (got.Err == nil) {
			t.Fatalf("%s: err %v, want one like %v", want.ID, got.Err, want.Err)
		}
		for _, kind := range []error{hostloop.ErrHostStopped, host.ErrMemoryBudget, hostloop.ErrSubmissionWithdrawn} {
			if errors.Is(got.Err, kind) != errors.Is(want.Err, kind) {
				t.Fatalf("%s: err %v, want one like %v", want.ID, got.Err, want.Err)
			}
		}
	}
	gotInc, err := b.Incarnation(ctx, inc.ID)
	if err != nil || gotInc.ID != inc.ID || gotInc.HostID != "h1" || !gotInc.Started.Equal(created) {
		t.Fatalf("incarnation %+v, %v", gotInc, err)
	}
	if _, err := b.Lookup(ctx, "s-h1-0123456789ab-9"); !errors.Is(err, hostloop.ErrUnknownSession) {
		t.Fatalf("absent session: %v", err)
	}
	if _, err := b.Incarnation(ctx, "h1-ffffffffffff"); !errors.Is(err, hostloop.ErrUnknownIncarnation) {
		t.Fatalf("absent incarnation: %v", err)
	}
}

func TestSessionArchiveTruncatesToTheBucketBound(t *testing.T) {
	env := fabrictest.NewEnv(t)
	a := newArchive(t, env)
	ctx := fabrictest.Ctx(t)
	long := strings.Repeat("ä", 100<<10) // 200 KiB of two-byte runes
	tests := []struct {
		name string
		in   hostloop.SessionStatus
		cut  func(hostloop.SessionStatus) string
	}{
		{"value", hostloop.SessionStatus{ID: "s-h-0123456789ab-1", State: hostloop.SessionCompleted, Value: long + "!"}, func(s hostloop.SessionStatus) string { return s.Value }},
		{"error", hostloop.SessionStatus{ID: "s-h-0123456789ab-2", State: hostloop.SessionFailed, Err: errors.New(long), Error: long}, func(s hostloop.SessionStatus) string { return s.Error }},
		// Control characters take six bytes each in JSON.
		{"escaped value", hostloop.SessionStatus{ID: "s-h-0123456789ab-3", State: hostloop.SessionCompleted, Value: strings.Repeat("\x01", 60<<10)}, func(s hostloop.SessionStatus) string { return s.Value }},
	}
	for _, tt := range tests {
		a.Record(tt.in)
	}
	if err := a.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if st := a.Stats(); st.Stored != uint64(len(tests)) || st.Truncated != uint64(len(tests)) {
		t.Fatalf("stats %+v", st)
	}
	kv := sessionBucket(t, env)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := kv.Get(ctx, "s."+string(tt.in.ID))
			if err != nil {
				t.Fatal(err)
			}
			if n := len(e.Value()); n > 64<<10 {
				t.Fatalf("record of %d bytes", n)
			}
			got, err := a.Lookup(ctx, tt.in.ID)
			if err != nil {
				t.Fatal(err)
			}
			kept, orig := tt.cut(got), tt.cut(tt.in)
			if tt.in.Error != "" {
				var marked bool
				if kept, marked = strings.CutSuffix(kept, " [truncated]"); !marked {
					t.Errorf("error does not say it was cut: ...%q", kept[len(kept)-20:])
				}
			}
			if !got.Truncated || kept == "" || !strings.HasPrefix(orig, kept) || len(kept) >= len(orig) || !utf8.ValidString(kept) {
				t.Fatalf("truncated=%v, kept %d of %d bytes (valid UTF-8 %v)", got.Truncated, len(kept), len(orig), utf8.ValidString(kept))
			}
		})
	}
}

// A finished session's audit is kept in its record, beside its outcome
// and in the same write: all of it when it fits, else its newest events,
// never at the expense of the outcome.
func TestSessionArchiveKeepsTheAudit(t *testing.T) {
	env := fabrictest.NewEnv(t)
	a := newArchive(t, env)
	ctx := fabrictest.Ctx(t)
	audit := func(n int) []host.AuditEvent {
		out := make([]host.AuditEvent, n)
		for i := range out {
			out[i] = host.AuditEvent{Seq: uint64(i + 1), At: created.Add(time.Duration(i) * time.Second), ID: host.ExternalToolID(i/3 + 1),
				Tool: "text.remote", CallIndex: uint64(i/3 + 1), Attempt: 1, Outcome: host.AuditSucceeded, Bytes: i}
		}
		return out
	}
	tests := []struct {
		name     string
		in       hostloop.SessionStatus
		wantAll  bool
		wantNone bool
	}{
		{"small", hostloop.SessionStatus{ID: "s-h-0123456789ab-1", State: hostloop.SessionCompleted, Value: "1", Audit: audit(12)}, true, false},
		{"newest", hostloop.SessionStatus{ID: "s-h-0123456789ab-2", State: hostloop.SessionCompleted, Value: "2", Audit: audit(5000)}, false, false},
		{"value first", hostloop.SessionStatus{ID: "s-h-0123456789ab-3", State: hostloop.SessionCompleted, Value: strings.Repeat("v", 100<<10), Audit: audit(10)}, false, true},
	}
	for _, tt := range tests {
		a.Record(tt.in)
	}
	if err := a.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if st := a.Stats(); st.Stored != uint64(len(tests)) {
		t.Fatalf("%d writes stored for %d sessions: %+v", st.Stored, len(tests), st)
	}
	b := newArchive(t, env)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := b.Lookup(ctx, tt.in.ID)
			if err != nil {
				t.Fatal(err)
			}
			n := len(got.Audit)
			switch {
			case tt.wantAll && n != len(tt.in.Audit), tt.wantNone && n != 0, !tt.wantAll && !tt.wantNone && (n == 0 || n >= len(tt.in.Audit)):
				t.Fatalf("kept %d of %d audit events", n, len(tt.in.Audit))
			}
			if n > 0 {
				last, want := got.Audit[n-1], tt.in.Audit[len(tt.in.Audit)-1]
				if last.Seq != want.Seq || !last.At.Equal(want.At) || last.Outcome != want.Outcome || last.Bytes != want.Bytes {
					t.Fatalf("newest kept %+v, want %+v", last, want)
				}
			}
		})
	}
}

func TestSessionArchiveRefusesBadIDs(t *testing.T) {
	env := fabrictest.NewEnv(t)
	errs := &errorLog{}
	a := newArchive(t, env, hostnats.WithErrorHandler(errs.add))
	ctx := fabrictest.Ctx(t)
	bad := []string{"", "s.x", "s-*", "s->", "a b", "s-h1\x00", "s-ü", strings.Repeat("s", 300)}
	for _, id := range bad {
		t.Run(id[:min(len(id), 8)], func(t *testing.T) {
			if _, err := a.Lookup(ctx, hostloop.SessionID(id)); !errors.Is(err, hostloop.ErrUnknownSession) {
				t.Fatalf("Lookup: %v, want ErrUnknownSession", err)
			}
			if _, err := a.Incarnation(ctx, id); !errors.Is(err, hostloop.ErrUnknownIncarnation) {
				t.Fatalf("Incarnation: %v, want ErrUnknownIncarnation", err)
			}
			if err := a.Register(ctx, hostloop.Incarnation{ID: id}); !errors.Is(err, host.ErrInvalidInput) {
				t.Fatalf("Register: %v, want ErrInvalidInput", err)
			}
		})
		a.Record(hostloop.SessionStatus{ID: hostloop.SessionID(id), State: hostloop.SessionCompleted})
	}
	if err := a.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if st := a.Stats(); st.Dropped != uint64(len(bad)) || st.Stored != 0 || errs.count() != len(bad) {
		t.Fatalf("stats %+v, %d errors reported", st, errs.count())
	}
	st := sessionBucketStatus(t, env)
	if st.Values() != 0 {
		t.Fatalf("bucket holds %d values after bad ids", st.Values())
	}
}

func TestSessionArchiveRefreshesItsIncarnations(t *testing.T) {
	env := fabrictest.NewEnv(t)
	env.Cfg.SessionRetention = 4 * time.Second
	if err := fabric.Provision(fabrictest.Ctx(t), env.JS, env.Cfg); err != nil {
		t.Fatal(err)
	}
	a := newArchive(t, env)
	ctx := fabrictest.Ctx(t)
	if err := a.Register(ctx, hostloop.Incarnation{ID: "h1-0123456789ab", HostID: "h1", Started: created}); err != nil {
		t.Fatal(err)
	}
	kv := sessionBucket(t, env)
	first, err := kv.Get(ctx, "i.h1-0123456789ab")
	if err != nil {
		t.Fatal(err)
	}
	// Every quarter of the retention: rewritten before the TTL takes it.
	testwait.Until(t, 10*time.Second, "the incarnation rewritten", func() bool {
		e, err := kv.Get(ctx, "i.h1-0123456789ab")
		return err == nil && e.Revision() > first.Revision()
	})
}

func TestSessionArchiveAfterClose(t *testing.T) {
	env := fabrictest.NewEnv(t)
	errs := &errorLog{}
	a := newArchive(t, env, hostnats.WithErrorHandler(errs.add))
	_ = a.Close()
	_ = a.Close()
	a.Record(hostloop.SessionStatus{ID: "s-h1-0123456789ab-1", State: hostloop.SessionCompleted})
	if st := a.Stats(); st.Dropped != 1 || errs.count() != 1 {
		t.Fatalf("stats %+v, %d errors", st, errs.count())
	}
	fabrictest.WantErrIs(t, a.Flush(fabrictest.Ctx(t)), nil)
	fabrictest.WantErrIs(t, a.Register(fabrictest.Ctx(t), hostloop.Incarnation{ID: "h1-0123456789ab"}), hostnats.ErrClosed)
}

func TestNewSessionArchiveNeedsTheBucket(t *testing.T) {
	srv := natstest.Start(t)
	nc := srv.Connect()
	_, err := hostnats.NewSessionArchive(fabrictest.Ctx(t), nc, fabric.DefaultConfig(), fabrictest.Key)
	fabrictest.WantErrIs(t, err, jetstream.ErrBucketNotFound)
	bad := fabric.DefaultConfig()
	bad.SessionRetention = 0
	_, err = hostnats.NewSessionArchive(fabrictest.Ctx(t), nc, bad, fabrictest.Key)
	fabrictest.WantErrIs(t, err, fabric.ErrInvalidConfig)
}

// TestSessionArchiveAcrossLoops runs host loops over the real transport and
// archive: a session suspended when one process stops gracefully answers
// host_stopped in the next, one left by a process that lost its archive (as
// a killed one does) answers host_restarted.
func TestSessionArchiveAcrossLoops(t *testing.T) {
	env := fabrictest.NewEnv(t)
	ctx := fabrictest.Ctx(t)
	start := func() (*hostloop.Loop, *hostnats.SessionArchive, func()) {
		tr, err := hostnats.NewHostTransport(ctx, env.NC, env.Cfg, "h1", fabrictest.Key)
		if err != nil {
			t.Fatal(err)
		}
		a, err := hostnats.NewSessionArchive(ctx, env.NC, env.Cfg, fabrictest.Key)
		if err != nil {
			t.Fatal(err)
		}
		l, err := hostloop.StartLoop(hostloop.LoopConfig{
			Transport: tr, HostID: "h1", Archive: a,
			Catalog: tooltest.Catalog[*host.Runtime](t, toolspec.Spec{Name: "text.remote"}),
		})
		if err != nil {
			t.Fatal(err)
		}
		return l, a, func() { l.Stop(); _ = a.Close(); _ = tr.Close() }
	}
	submit := func(l *hostloop.Loop) hostloop.SessionID {
		s, err := l.Submit(ctx, hostloop.Submission{Source: `await tool.start("text.remote", "x")`})
		if err != nil || s.State != hostloop.SessionSuspended {
			t.Fatalf("submit: %+v, %v", s, err)
		}
		return s.ID
	}

	l1, _, stop1 := start()
	graceful := submit(l1)
	stop1()

	l2, a2, stop2 := start()
	killed := submit(l2)
	// A kill: the archive goes before the loop can record anything.
	_ = a2.Close()
	stop2()

	l3, _, stop3 := start()
	defer stop3()
	for _, tt := range []struct {
		id   hostloop.SessionID
		want error
	}{{graceful, hostloop.ErrHostStopped}, {killed, hostloop.ErrHostRestarted}} {
		st, _, err := l3.Status(ctx, tt.id)
		if err != nil || st.State != hostloop.SessionFailed || !errors.Is(st.Err, tt.want) {
			t.Fatalf("%s: %+v, %v; want failed with %v", tt.id, st, err, tt.want)
		}
	}
	if _, _, err := l3.Status(ctx, "s-h1-000000000000-1"); !errors.Is(err, hostloop.ErrUnknownSession) {
		t.Fatalf("unknown incarnation: %v", err)
	}
}

// A graceful stop records every suspended session, however many there
// are: the archive's queue is bounded, so the loop waits for a batch to
// be stored before it queues the next, within its ArchiveTimeout.
func TestLoopStopArchivesEverySuspendedSession(t *testing.T) {
	const sessions = 600
	env := fabrictest.NewEnv(t)
	a := newArchive(t, env, hostnats.WithMaxPending(64))
	l, err := hostloop.StartLoop(hostloop.LoopConfig{
		// Nobody answers: every session stays suspended.
		Transport: hostloop.NewMemTransport(sessions),
		HostID:    "h1",
		Archive:   a,
		Catalog:   tooltest.Catalog[*host.Runtime](t, toolspec.Spec{Name: "t"}),
	})
	if err != nil {
		t.Fatal(err)
	}
	for range sessions {
		if _, err := l.Submit(fabrictest.Ctx(t), hostloop.Submission{Source: `await tool.start("t", "x")`}); err != nil {
			t.Fatal(err)
		}
	}
	l.Stop()
	if st := a.Stats(); st.Dropped != 0 || st.Failed != 0 || st.Stored < sessions {
		t.Fatalf("archive %+v after stopping with %d suspended sessions: want all stored, none dropped", st, sessions)
	}
}
