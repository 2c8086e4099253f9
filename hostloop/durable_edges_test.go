package hostloop

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/toolspec"
	"github.com/splashfabric/splashfabric/workflow"
)

// catalogOf registers the tools of a catalog written as YAML.
func catalogOf(t testing.TB, yaml string) func(*host.Runtime) error {
	t.Helper()
	cat, err := toolspec.Parse([]byte(yaml), ".")
	if err != nil {
		t.Fatal(err)
	}
	set, err := cat.Compile()
	if err != nil {
		t.Fatal(err)
	}
	return func(rt *host.Runtime) error { return rt.RegisterTools(set) }
}

// restartLoop stops l as a kill does when kill is set (nothing more of it
// is stored), and starts the next process on the same stores.
func restartLoop(t *testing.T, l *Loop, kill bool, log *dyingLog, a *memArchive, cfg LoopConfig) *Loop {
	t.Helper()
	if kill {
		log.dead.Store(true)
		a.crash()
	}
	l.Stop()
	log.dead.Store(false)
	a.mu.Lock()
	a.crashed = false
	a.mu.Unlock()
	next, err := StartLoop(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return next
}

// statusNow asks the loop for a session's status.
func statusNow(t *testing.T, l *Loop, id SessionID) (SessionStatus, []host.AuditEvent) {
	t.Helper()
	s, audit, err := l.Status(context.Background(), id)
	if err != nil {
		t.Fatalf("status of %s: %v", id, err)
	}
	return s, audit
}

// A script that waits a week for its tool (a human's approval) keeps its
// ledger for as long as it waits, across a restart in between: nothing
// ages its history out.
func TestDurableSessionWaitsForDays(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr, a, log := newChanTransport(), newMemArchive(), &dyingLog{Log: workflow.NewMemoryLog()}
		cfg := LoopConfig{Transport: tr, HostID: "h1", Archive: a, Ledger: log, Catalog: remoteCatalog(t)}
		l, err := StartLoop(cfg)
		if err != nil {
			t.Fatal(err)
		}
		s := submit(t, l, `return "approved: " + await tool.start("text.remote", "release 1.2")`)
		first := <-tr.Invocations()
		time.Sleep(8 * 24 * time.Hour)
		l = restartLoop(t, l, true, log, a, cfg)
		defer l.Stop()
		synctest.Wait()
		// Past the stream's memory of its message id, the pool is asked:
		// its worker still holds the call, so nothing goes out again.
		select {
		case again := <-tr.Invocations():
			t.Fatalf("a call its worker holds was sent again: %+v", again)
		default:
		}
		time.Sleep(24 * time.Hour)
		tr.Succeed(first, "yes")
		synctest.Wait()
		if got, _ := statusNow(t, l, s.ID); got.State != SessionCompleted || got.Value != "approved: yes" {
			t.Fatalf("after nine days: %+v", got)
		}
	})
}

// rejectingLog is a Log whose ledger of one session does not verify, as a
// forged record, or one sealed under a key no longer held, reads back.
type rejectingLog struct {
	workflow.Log
	session string
}

func (r rejectingLog) Load(ctx context.Context, session string) ([]workflow.Entry, error) {
	if session == r.session {
		return nil, fmt.Errorf("%w: %s at 0: recordauth: record tag does not verify", workflow.ErrLedgerRejected, session)
	}
	return r.Log.Load(ctx, session)
}

// A ledger that does not verify (forged, sealed under a retired key) or
// does not replay (damaged) fails its own session with ledger_rejected
// and keeps the ledger for inspection; the host starts, and every other
// session resumes. A later start leaves the failed ones be.
func TestDurableBadLedgerFailsOnlyItsSession(t *testing.T) {
	tr, a, mem := newChanTransport(), newMemArchive(), workflow.NewMemoryLog()
	l := durableLoop(t, tr, a, mem, remoteCatalog(t))
	good := submit(t, l, `return await tool.start("text.remote", "good")`)
	forged := submit(t, l, `return await tool.start("text.remote", "forged")`)
	damaged := submit(t, l, `return await tool.start("text.remote", "damaged")`)
	for range 3 {
		next(t, tr)
	}
	l.Stop()

	ctx := context.Background()
	entries, err := mem.Load(ctx, string(damaged.ID))
	if err != nil {
		t.Fatal(err)
	}
	bad := append(slices.Clone(entries), workflow.Entry{At: entries[0].At, Applied: &workflow.Applied{Kind: workflow.InputSucceeded, Op: 99, Output: "never asked"}})
	if err := mem.Remove(ctx, string(damaged.ID)); err != nil {
		t.Fatal(err)
	}
	if err := mem.Append(ctx, string(damaged.ID), 0, bad); err != nil {
		t.Fatal(err)
	}
	log := rejectingLog{Log: mem, session: string(forged.ID)}
	for restart := range 2 {
		l = durableLoop(t, tr, a, log, remoteCatalog(t))
		for _, id := range []SessionID{forged.ID, damaged.ID} {
			got := waitState(t, l, id, SessionFailed)
			if !errors.Is(got.Err, ErrLedgerRejected) {
				t.Fatalf("start %d: %s failed with %v, want ErrLedgerRejected", restart, id, got.Err)
			}
		}
		if restart == 0 {
			resent := next(t, tr)
			if !strings.Contains(resent.Input.Text, "good") {
				t.Fatalf("the good session's call came back as %q", resent.Input.Text)
			}
			tr.Succeed(resent, "fine")
			if got := waitState(t, l, good.ID, SessionCompleted); got.Value != "fine" {
				t.Fatalf("good session: %+v", got)
			}
		}
		l.Stop()
		left, _ := mem.Sessions(ctx)
		if !slices.Contains(left, string(forged.ID)) || !slices.Contains(left, string(damaged.ID)) {
			t.Fatalf("start %d: the rejected ledgers were not kept: %v", restart, left)
		}
	}
}

// A cancel goes to the worker only once its record is stored. A host that
// dies in between leaves the call merely claimed, and a worker's
// acknowledgement of a cancellation the next process has no record of
// (as an older host, which sent first, could leave) still ends it, rather
// than wedging the session.
func TestDurableCancelLeavesOnlyOnceRecorded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr, a, log := newChanTransport(), newMemArchive(), &dyingLog{Log: workflow.NewMemoryLog()}
		cat := catalogOf(t, "tools:\n  - name: text.remote\n    cancellable: true\n")
		cfg := LoopConfig{Transport: tr, HostID: "h1", Archive: a, Ledger: log, Catalog: cat}
		l, err := StartLoop(cfg)
		if err != nil {
			t.Fatal(err)
		}
		s := submit(t, l, `try { return await tool.start("text.remote", "a") } catch (e) { return "stopped: " + e.message }`)
		inv := <-tr.Invocations()
		release := log.hold()
		if err := l.Cancel(context.Background(), s.ID, 1); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if c := tr.Cancels(); len(c) != 0 {
			t.Fatalf("cancel sent before its record was stored: %+v", c)
		}
		log.dead.Store(true)
		release()
		l = restartLoop(t, l, true, log, a, cfg)
		defer l.Stop()
		synctest.Wait()
		if c := tr.Cancels(); len(c) != 0 {
			t.Fatalf("the next process sent a cancel nobody recorded: %+v", c)
		}
		tr.Message(protocol.CancelReplyMessage(protocol.CancelReply{RequestID: inv.RequestID, Attempt: 1, Disposition: protocol.CancelAcknowledged}))
		synctest.Wait()
		if got, _ := statusNow(t, l, s.ID); got.State != SessionCompleted || !strings.Contains(got.Value, "stopped") {
			t.Fatalf("an acknowledged cancellation left the session %+v", got)
		}
	})
}

// startCancelling starts a loop on cfg, submits script and, once its first
// call is published, asks for that call's cancel.
func startCancelling(t *testing.T, cfg LoopConfig, tr interface{ Invocations() <-chan protocol.Invoke }, script string) (*Loop, SessionStatus) {
	t.Helper()
	l, err := StartLoop(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := submit(t, l, script)
	<-tr.Invocations()
	if err := l.Cancel(context.Background(), s.ID, 1); err != nil {
		t.Fatal(err)
	}
	synctest.Wait()
	return l, s
}

// With the cancel's record stored, the next process asks again.
func TestDurableRecordedCancelIsAskedAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr, a, log := newChanTransport(), newMemArchive(), &dyingLog{Log: workflow.NewMemoryLog()}
		cat := catalogOf(t, "tools:\n  - name: text.remote\n    cancellable: true\n")
		cfg := LoopConfig{Transport: tr, HostID: "h1", Archive: a, Ledger: log, Catalog: cat}
		l, s := startCancelling(t, cfg, tr, `try { return await tool.start("text.remote", "a") } catch (e) { return "stopped" }`)
		if c := tr.Cancels(); len(c) != 1 {
			t.Fatalf("%d cancels sent once recorded", len(c))
		}
		l = restartLoop(t, l, true, log, a, cfg)
		defer l.Stop()
		synctest.Wait()
		c := tr.Cancels()
		if len(c) != 2 || c[1].RequestID != c[0].RequestID {
			t.Fatalf("the next process did not ask again: %+v", c)
		}
		tr.Message(protocol.CancelReplyMessage(protocol.CancelReply{RequestID: c[1].RequestID, Attempt: 1, Disposition: protocol.CancelAcknowledged}))
		synctest.Wait()
		if got, _ := statusNow(t, l, s.ID); got.State != SessionCompleted || got.Value != "stopped" {
			t.Fatalf("session %+v", got)
		}
	})
}

// reconciling is a MemTransport whose workers answer reconciliation
// requests with answer.
type reconciling struct {
	*MemTransport
	answer atomic.Value // protocol.OperationStatus
	asked  atomic.Int64
}

func newReconciling(st protocol.OperationStatus) *reconciling {
	r := &reconciling{MemTransport: NewMemTransport(64)}
	r.answer.Store(st)
	return r
}

func (r *reconciling) Reconcile(_ context.Context, sessionID, tool, key string) (protocol.OperationReconcileResult, error) {
	r.asked.Add(1)
	return protocol.OperationReconcileResult{SessionID: sessionID, Tool: tool, OperationKey: key, Status: r.answer.Load().(protocol.OperationStatus)}, nil
}

// A live host finds a call whose worker went silent: it asks the pool
// after ReconcileAfter and, once no delivery is due any more, ends a
// claimed tool's call indeterminate and sends an idempotent tool's again,
// long before their deadlines.
func TestLiveHostReconcilesSilentCalls(t *testing.T) {
	cat := `tools:
  - name: text.claimed
    deadline: 1h
  - name: text.idem
    idempotent: true
    deadline: 1h
`
	for _, tc := range []struct {
		tool       string
		wantState  SessionState
		republish  bool
		wantResult string
	}{
		{"text.claimed", SessionCompleted, false, "indeterminate"},
		{"text.idem", SessionCompleted, true, "again"},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tr := newReconciling(protocol.StatusUnknown())
				l, err := StartLoop(LoopConfig{Transport: tr, HostID: "h1", Catalog: catalogOf(t, cat),
					ReconcileAfter: 10 * time.Second, RedeliveryHorizon: 50 * time.Second})
				if err != nil {
					t.Fatal(err)
				}
				defer l.Stop()
				s := submit(t, l, fmt.Sprintf(`try { return await tool.start(%q, "x") } catch (e) { return e.message }`, tc.tool))
				first := <-tr.Invocations()
				time.Sleep(15 * time.Second)
				synctest.Wait()
				if n := tr.asked.Load(); n != 1 {
					t.Fatalf("asked %d times after 15s, want once", n)
				}
				time.Sleep(50 * time.Second)
				synctest.Wait()
				if tc.republish {
					again := <-tr.Invocations()
					if again.IdempotencyKey != first.IdempotencyKey || again.Attempt != first.Attempt {
						t.Fatalf("redispatched %+v, first %+v", again, first)
					}
					tr.Succeed(again, "again")
					synctest.Wait()
				}
				got, _ := statusNow(t, l, s.ID)
				if got.State != tc.wantState || !strings.Contains(got.Value, tc.wantResult) {
					t.Fatalf("after a minute of silence: %+v", got)
				}
			})
		})
	}
}

// A resumed idempotent call nobody knows of, whose cancellation the
// earlier process had asked, ends cancelled instead of going out again.
func TestResumedRedispatchChecksCancellation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := newReconciling(protocol.StatusUnknown())
		a, log := newMemArchive(), &dyingLog{Log: workflow.NewMemoryLog()}
		cat := catalogOf(t, "tools:\n  - name: text.idem\n    idempotent: true\n    cancellable: true\n")
		cfg := LoopConfig{Transport: tr, HostID: "h1", Archive: a, Ledger: log, Catalog: cat,
			ReconcileAfter: 10 * time.Second, RedeliveryHorizon: 50 * time.Second}
		l, s := startCancelling(t, cfg, tr, `try { return await tool.start("text.idem", "x") } catch (e) { return "cancelled" }`)
		l = restartLoop(t, l, true, log, a, cfg)
		defer l.Stop()
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		if p := tr.Published(); len(p) != 1 {
			t.Fatalf("a call whose cancellation was asked went out again: %d publishes", len(p))
		}
		if got, _ := statusNow(t, l, s.ID); got.State != SessionCompleted || got.Value != "cancelled" {
			t.Fatalf("session %+v", got)
		}
	})
}

// Stream bounds span a restart as they span retries, and a resumed
// session's audit goes on from what its first run recorded; a finished
// session's audit is kept with its outcome.
func TestDurableStreamCountsAndAuditSpanARestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr, a, log := newChanTransport(), newMemArchive(), &dyingLog{Log: workflow.NewMemoryLog()}
		cat := catalogOf(t, `tools:
  - name: text.stream
    max_attempts: 2
    stream: {max_chunks: 4, max_chunk_bytes: 16, max_source_bytes: 64, max_released_bytes: 64}
`)
		cfg := LoopConfig{Transport: tr, HostID: "h1", Archive: a, Ledger: log, Catalog: cat, KeepFinished: 1,
			RetryInitial: time.Second, RetryMax: time.Second}
		l, err := StartLoop(cfg)
		if err != nil {
			t.Fatal(err)
		}
		s := submit(t, l, `return await tool.start("text.stream", "a")`)
		inv := <-tr.Invocations()
		for i, text := range []string{"one", "two", "three"} {
			tr.Message(protocol.ChunkMessage(protocol.Chunk{RequestID: inv.RequestID, Sequence: uint64(i + 1), Text: text}))
		}
		tr.Reply(protocol.Result{RequestID: inv.RequestID, Attempt: 1, Status: protocol.ResultRetryTransient, Error: "busy"})
		synctest.Wait()
		_, before := statusNow(t, l, s.ID)
		l = restartLoop(t, l, true, log, a, cfg)
		defer l.Stop()
		synctest.Wait()
		again := <-tr.Invocations()
		if again.Attempt != 2 || again.Stream == nil || again.Stream.UsedChunks != 3 {
			t.Fatalf("after the restart attempt %d goes out with %+v used, want 3 chunks", again.Attempt, again.Stream)
		}
		_, after := statusNow(t, l, s.ID)
		if len(after) == 0 || !after[0].At.Equal(before[0].At) || after[0].Outcome != before[0].Outcome {
			t.Fatalf("the resumed audit does not begin where the first did:\n before %+v\n after %+v", before, after)
		}
		tr.Succeed(again, "done")
		synctest.Wait()
		// Forgotten by the loop (KeepFinished 1), its audit comes from the archive.
		submit(t, l, `return 1`)
		synctest.Wait()
		got, audit := statusNow(t, l, s.ID)
		if got.State != SessionCompleted || len(audit) == 0 || audit[len(audit)-1].Outcome != host.AuditSucceeded {
			t.Fatalf("archived session %+v with audit %+v", got, audit)
		}
	})
}

// An operator ends a session: two-phase, its workers acknowledge and it
// ends cancelled, its slot and ledger released and nothing its script
// starts afterwards dispatched; forced, at once, each operation's end in
// the audit and its worker told once the outcome is stored. A session that ended, or none, is refused and nothing
// changes.
func TestOperatorCancelsASession(t *testing.T) {
	script := `const a = tool.start("text.remote", "a"), b = tool.start("text.remote", "b");
try { await a } catch (e) { await tool.start("text.remote", "after") }
return await b`
	for _, force := range []bool{false, true} {
		t.Run(fmt.Sprintf("force=%v", force), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tr, a, log := newChanTransport(), newMemArchive(), workflow.NewMemoryLog()
				cat := catalogOf(t, "tools:\n  - name: text.remote\n    cancellable: true\n")
				l := durableLoop(t, tr, a, log, cat)
				defer l.Stop()
				s := submit(t, l, script)
				synctest.Wait()
				published := len(tr.Published())
				got, err := l.CancelSession(context.Background(), s.ID, force)
				if err != nil {
					t.Fatal(err)
				}
				if !force {
					if got.State != SessionSuspended || len(got.Operations) != 2 {
						t.Fatalf("two-phase cancel answered %+v", got)
					}
					synctest.Wait()
					for _, c := range tr.Cancels() {
						tr.Message(protocol.CancelReplyMessage(protocol.CancelReply{RequestID: c.RequestID, Attempt: c.Attempt, Disposition: protocol.CancelAcknowledged}))
					}
				}
				synctest.Wait()
				got, audit := statusNow(t, l, s.ID)
				if got.State != SessionCancelled || !errors.Is(got.Err, workflow.ErrSessionCancelled) {
					t.Fatalf("session %+v", got)
				}
				if n := len(tr.Published()); n != published {
					t.Fatalf("%d calls dispatched after the cancel", n-published)
				}
				cancelled := 0
				for _, e := range audit {
					if e.Outcome == host.AuditCancelled && (!force || strings.Contains(e.Detail, "forced")) {
						cancelled++
					}
				}
				if cancelled < 2 {
					t.Fatalf("audit lacks the cancellations: %+v", audit)
				}
				if left, _ := log.Sessions(context.Background()); len(left) != 0 {
					t.Fatalf("ledger left: %v", left)
				}
				if force {
					// The workers are still told, after the outcome is
					// stored, so the pool stops the calls; what they
					// answer finds no operation and changes nothing.
					if n := len(tr.Cancels()); n != 2 {
						t.Fatalf("%d cancels sent to the workers, want 2", n)
					}
					for _, c := range tr.Cancels() {
						tr.Message(protocol.CancelReplyMessage(protocol.CancelReply{RequestID: c.RequestID, Attempt: c.Attempt, Disposition: protocol.CancelAcknowledged}))
					}
					synctest.Wait()
					if again, _ := statusNow(t, l, s.ID); again.State != SessionCancelled {
						t.Fatalf("a late acknowledgement changed the session: %+v", again)
					}
				}
				if n := inspect(t, l, func(st *loopState) int { return st.suspended }); n != 0 {
					t.Fatalf("%d sessions still hold a slot", n)
				}
				if _, err := l.CancelSession(context.Background(), s.ID, true); !errors.Is(err, ErrSessionEnded) {
					t.Fatalf("cancelling it again: %v, want ErrSessionEnded", err)
				}
				if _, err := l.CancelSession(context.Background(), "s-nobody", false); !errors.Is(err, ErrUnknownSession) {
					t.Fatalf("cancelling no session: %v, want ErrUnknownSession", err)
				}
			})
		})
	}
}

// A session given a max lifetime is ended when it has lived that long:
// its calls are asked to stop and, unanswered, asserted cancelled after
// the grace.
func TestSessionEndsAtItsMaxLifetime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr, a, log := newChanTransport(), newMemArchive(), workflow.NewMemoryLog()
		cat := catalogOf(t, "tools:\n  - name: text.remote\n    cancellable: true\n")
		l, err := StartLoop(LoopConfig{Transport: tr, HostID: "h1", Archive: a, Ledger: log, Catalog: cat, LifetimeGrace: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Stop()
		s, err := l.Submit(context.Background(), Submission{Source: `return await tool.start("text.remote", "forever")`, MaxLifetime: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Hour - time.Second)
		synctest.Wait()
		if c := tr.Cancels(); len(c) != 0 {
			t.Fatalf("cancelled before its lifetime: %+v", c)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if c := tr.Cancels(); len(c) != 1 {
			t.Fatalf("%d cancels at its lifetime, want 1", len(c))
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		got, _ := statusNow(t, l, s.ID)
		if got.State != SessionFailed || !errors.Is(got.Err, workflow.ErrMaxLifetime) {
			t.Fatalf("after its lifetime and grace: %+v", got)
		}
	})
}

// A call that runs for hours is asked about less and less often: twice as
// late each time its pool says it runs, up to 16 ReconcileAfters apart.
func TestLongCallsAreAskedAboutLessOften(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := newReconciling(protocol.StatusRunning())
		l, err := StartLoop(LoopConfig{Transport: tr, HostID: "h1", Catalog: catalogOf(t, "tools:\n  - name: text.slow\n"),
			ReconcileAfter: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Stop()
		submit(t, l, `return await tool.start("text.slow", "x")`)
		<-tr.Invocations()
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		// At 10s, 30s, 70s, 150s, 310s and 470s: six questions in ten
		// minutes, against sixty at a fixed 10s.
		if n := tr.asked.Load(); n != 6 {
			t.Fatalf("asked %d times in ten minutes of a running call, want 6", n)
		}
	})
}

// lateArchive misses the first lookup of one session and stores its outcome
// right after, as a host that archives the outcome and then removes the
// ledger does between a reader's two reads.
type lateArchive struct {
	*memArchive
	id      SessionID
	outcome SessionStatus
	once    sync.Once
}

func (a *lateArchive) Lookup(ctx context.Context, id SessionID) (SessionStatus, error) {
	if id == a.id {
		missed := false
		a.once.Do(func() {
			missed = true
			a.memArchive.Record(a.outcome)
		})
		if missed {
			return SessionStatus{}, ErrUnknownSession
		}
	}
	return a.memArchive.Lookup(ctx, id)
}

// A session whose outcome is archived and whose ledger is removed between
// a reader's look at the archive and at the ledger reads as it ended, not
// as lost with a restarted host.
func TestStatusBetweenOutcomeAndLedgerRemoval(t *testing.T) {
	tr, mem := newChanTransport(), newMemArchive()
	first := durableLoop(t, tr, mem, workflow.NewMemoryLog(), remoteCatalog(t))
	first.Stop()
	id := SessionID("s-" + first.Incarnation().ID + "-1")
	a := &lateArchive{memArchive: mem, id: id, outcome: SessionStatus{ID: id, State: SessionCompleted, Value: "done"}}
	l := durableLoop(t, tr, a, workflow.NewMemoryLog(), remoteCatalog(t))
	defer l.Stop()
	got, _, err := l.Status(context.Background(), id)
	if err != nil || got.State != SessionCompleted || got.Value != "done" {
		t.Fatalf("status %+v, %v; want the archived outcome", got, err)
	}
}
