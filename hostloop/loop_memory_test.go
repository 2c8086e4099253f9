package hostloop

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/internal/tooltest"
	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/toolspec"
)

// startCappedLoop is a loop whose sessions have a small memory budget, in
// a process with a soft memory limit, so an attack that got through
// would slow the test down rather than take the machine's memory.
func startCappedLoop(t *testing.T, tr *MemTransport) *Loop {
	t.Helper()
	old := debug.SetMemoryLimit(1 << 30)
	t.Cleanup(func() { debug.SetMemoryLimit(old) })
	l, err := StartLoop(LoopConfig{
		Transport: tr,
		HostID:    "h1",
		Catalog:   tooltest.Catalog[*host.Runtime](t, toolspec.Spec{Name: "text.remote"}),
		Limits:    Limits{SessionMemoryBudget: 64 << 20},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Stop)
	return l
}

// liveHeap is the heap left after a collection.
func liveHeap() int64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

// TestLoopSurvivesScriptAttacks: each attack fails its own session with
// its code, while a session that waits on a tool across it completes.
func TestLoopSurvivesScriptAttacks(t *testing.T) {
	tests := []struct {
		name    string
		sub     Submission
		wantErr error
	}{
		{"memory growth", Submission{Source: `const s = "x".repeat(2**20); let a=[]; while(true) a.push(s + a.length)`, ExecutionBudget: time.Minute}, host.ErrMemoryBudget},
		{"issue reproduction", Submission{Source: `let a=[]; while(true) a.push("x".repeat(2**28) + a.length)`, ExecutionBudget: time.Minute}, host.ErrMemoryBudget},
		{"100,000 un-awaited starts", Submission{Source: `for (let i = 0; i < 100000; i++) tool.start("text.remote", "x")`, MaxPending: DefaultMaxSessionPending, ToolCallBudget: 1_000_000, ExecutionBudget: time.Minute}, host.ErrPendingLimit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := NewMemTransport(1 << 14)
			l := startCappedLoop(t, tr)
			ctx := context.Background()
			waiting, err := l.Submit(ctx, Submission{Source: `const r = await tool.start("text.remote", "w"); "waited " + r`})
			if err != nil {
				t.Fatal(err)
			}
			inv := next(t, tr)
			before := liveHeap()
			s, err := l.Submit(ctx, tt.sub)
			if err != nil {
				t.Fatal(err)
			}
			after := liveHeap()
			s = waitState(t, l, s.ID, SessionFailed)
			if !errors.Is(s.Err, tt.wantErr) {
				t.Fatalf("session failed with %v, want %v", s.Err, tt.wantErr)
			}
			_, audit, err := l.Status(ctx, s.ID)
			if err != nil {
				t.Fatal(err)
			}
			if len(audit) > DefaultAuditPerSession {
				t.Fatalf("%d audit events kept, bound %d", len(audit), DefaultAuditPerSession)
			}
			t.Logf("%v; live heap after the attack's first step %+d KiB, %d audit events kept", s.Err, (after-before)>>10, len(audit))

			p := protocol.TextPayload("ok")
			tr.Reply(protocol.Result{RequestID: inv.RequestID, Attempt: 1, Status: protocol.ResultSucceeded, Payload: &p})
			if w := waitState(t, l, waiting.ID, SessionCompleted); w.Value != "waited ok" {
				t.Fatalf("waiting session: %+v", w)
			}
		})
	}
}

// TestLoopSurvivesConcurrentAttackers is the reproduction with
// four attackers submitted at once (their first steps run on the callers'
// goroutines): each fails with ErrMemoryBudget, and a session waiting
// on a tool across them completes.
func TestLoopSurvivesConcurrentAttackers(t *testing.T) {
	tr := NewMemTransport(16)
	l := startCappedLoop(t, tr)
	ctx := context.Background()
	waiting, err := l.Submit(ctx, Submission{Source: `const r = await tool.start("text.remote", "w"); "waited " + r`})
	if err != nil {
		t.Fatal(err)
	}
	inv := next(t, tr)
	before := liveHeap()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			s, err := l.Submit(ctx, Submission{
				Source:          `const s = "x".repeat(2**20); let a=[]; while(true) a.push(s + a.length)`,
				ExecutionBudget: time.Minute,
			})
			if err == nil && !errors.Is(s.Err, host.ErrMemoryBudget) {
				err = fmt.Errorf("attacker ended %s with %v", s.State, s.Err)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("live heap after four attackers %+d KiB", (liveHeap()-before)>>10)
	p := protocol.TextPayload("ok")
	tr.Reply(protocol.Result{RequestID: inv.RequestID, Attempt: 1, Status: protocol.ResultSucceeded, Payload: &p})
	if w := waitState(t, l, waiting.ID, SessionCompleted); w.Value != "waited ok" {
		t.Fatalf("waiting session: %+v", w)
	}
}

// TestLoopRefusesPendingOverMaximum: a submission asking to hold more
// pending operations than the host allows is refused before it runs.
func TestLoopRefusesPendingOverMaximum(t *testing.T) {
	l := startCappedLoop(t, NewMemTransport(16))
	_, err := l.Submit(context.Background(), Submission{Source: `1`, MaxPending: DefaultMaxSessionPending + 1})
	if !errors.Is(err, ErrLimitTooHigh) {
		t.Fatalf("err = %v, want ErrLimitTooHigh", err)
	}
}
