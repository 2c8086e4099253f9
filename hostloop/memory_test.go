package hostloop

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/internal/testwait"

	"github.com/splashfabric/splashfabric/internal/tooltest"

	"github.com/splashfabric/splashfabric/toolspec"
)

// TestMemoryWatchRefusesThenSheds: over the admission line the loop
// refuses new submissions of an owner whose sessions hold its share with
// ErrMemoryPressure while it takes another's, and over the shed line it
// fails the session holding the most memory with ErrMemoryBudget, one at
// a time, leaving the others to complete.
func TestMemoryWatchRefusesThenSheds(t *testing.T) {
	// The heap's level is the test's (readHeap); the budget is that of
	// the sessions' real holdings (13 MiB), so that the heavy owner's
	// share (the admission line, 12 MiB) is less than they hold.
	const budget = 16 << 20
	var live atomic.Int64
	var shedOnce atomic.Bool
	// What each session holds, as the meter would say once its carry
	// settled: the meter's own accuracy is package host's to test.
	var holdings sync.Map // SessionID -> int64
	tr := newChanTransport()
	l, err := StartLoop(LoopConfig{
		Transport: tr, HostID: "h1",
		Catalog:          tooltest.Catalog[*host.Runtime](t, toolspec.Spec{Name: "text.remote"}),
		MemoryBudget:     budget,
		MemoryWatchEvery: time.Millisecond,
		readHeap: func(collect bool) int64 {
			// One session shed is enough: the collection that would
			// confirm the next finds the heap below the line.
			if collect && live.Load() > budget*90/100 && !shedOnce.CompareAndSwap(false, true) {
				return budget / 2
			}
			return live.Load()
		},
		memoryHeld: func(id SessionID) int64 {
			n, _ := holdings.Load(id)
			h, _ := n.(int64)
			return h
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Stop)
	ctx := context.Background()
	// Three sessions that hold 1, 8 and 4 MiB across an await.
	var ids []SessionID
	for _, mib := range []int{1, 8, 4} {
		s, err := l.Submit(ctx, Submission{Owner: "heavy", Source: fmt.Sprintf(`const kept = []; for (let i = 0; i < %d; i++) kept.push("x".repeat(2**20) + i); await tool.start("text.remote", "x"); kept.length`, mib)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, s.ID)
		holdings.Store(s.ID, int64(mib)<<20)
	}
	for range ids {
		next(t, tr)
	}

	live.Store(budget * 80 / 100)
	testwait.Until(t, 0, "the heavy owner's submissions to be refused", func() bool {
		_, err := l.Submit(ctx, Submission{Owner: "heavy", Source: `return 1`})
		return errors.Is(err, ErrMemoryPressure)
	})
	if _, err := l.Submit(ctx, Submission{Owner: "light", Source: `return 1`}); err != nil {
		t.Fatalf("an owner holding nothing, under pressure: %v", err)
	}
	live.Store(budget * 95 / 100)
	st := waitState(t, l, ids[1], SessionFailed)
	if !errors.Is(st.Err, host.ErrMemoryBudget) {
		t.Fatalf("the largest session failed with %v, want ErrMemoryBudget", st.Err)
	}
	live.Store(budget / 2)
	testwait.Until(t, 0, "submissions to be taken again", func() bool {
		_, err := l.Submit(ctx, Submission{Owner: "heavy", Source: `return 1`})
		return err == nil
	})
	for _, id := range []SessionID{ids[0], ids[2]} {
		if st, _, _ := l.Status(ctx, id); st.State != SessionSuspended {
			t.Fatalf("session %s: %+v; only the largest should have failed", id, st)
		}
	}
}
