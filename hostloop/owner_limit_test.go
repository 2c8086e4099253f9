package hostloop

import (
	"context"
	"errors"
	"testing"

	"github.com/splashfabric/splashfabric/host"

	"github.com/splashfabric/splashfabric/internal/tooltest"

	"github.com/splashfabric/splashfabric/toolspec"
)

// TestOwnerHoldsItsShareOnly: an owner at its share of the host's
// sessions is refused (ErrOwnerBusy) while another owner still gets in,
// and a session of the first that ends makes room for it again.
func TestOwnerHoldsItsShareOnly(t *testing.T) {
	tr := newChanTransport()
	l, err := StartLoop(LoopConfig{Transport: tr, HostID: "h1", Limits: Limits{MaxSuspendedSessions: 10, MaxSessionsPerOwner: 2},
		Catalog: tooltest.Catalog[*host.Runtime](t, toolspec.Spec{Name: "t"})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Stop)
	ctx := context.Background()
	submit := func(owner string) (SessionStatus, error) {
		return l.Submit(ctx, Submission{Source: `return await tool.start("t", "x")`, Owner: owner})
	}
	first, err := submit("a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := submit("a"); err != nil {
		t.Fatal(err)
	}
	if _, err := submit("a"); !errors.Is(err, ErrOwnerBusy) {
		t.Fatalf("a third session of a: %v, want ErrOwnerBusy", err)
	}
	if _, err := submit("b"); err != nil {
		t.Fatalf("b beside a at its share: %v", err)
	}
	// A script that does not wait takes no place.
	if s, err := l.Submit(ctx, Submission{Source: `return 1`, Owner: "a"}); err != nil || s.State != SessionCompleted {
		t.Fatalf("a script that finishes at once: %+v, %v", s, err)
	}
	for range 3 {
		tr.Succeed(next(t, tr), "done")
	}
	waitState(t, l, first.ID, SessionCompleted)
	if _, err := submit("a"); err != nil {
		t.Fatalf("a after one of its sessions ended: %v", err)
	}
}

// The reproduction at the default limits: one client's
// never-ending scripts filled --max-sessions and every other client got
// host_busy. Now the client stops at a quarter of them and another still
// gets in.
func TestOneOwnerCannotFillTheHost(t *testing.T) {
	tr := newChanTransport()
	l, err := StartLoop(LoopConfig{Transport: tr, HostID: "h1",
		Catalog: tooltest.Catalog[*host.Runtime](t, toolspec.Spec{Name: "t"})})
	if err != nil {
		t.Fatal(err)
	}
	// A worker that never answers: the invocations go nowhere.
	done := make(chan struct{})
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		for {
			select {
			case <-tr.Invocations():
			case <-done:
				return
			}
		}
	}()
	t.Cleanup(func() { close(done); <-drained })
	t.Cleanup(l.Stop)
	ctx := context.Background()
	share := DefaultMaxSuspendedSessions / 4
	for i := range share {
		if _, err := l.Submit(ctx, Submission{Source: `await tool.start("t", "x")`, Owner: "flood"}); err != nil {
			t.Fatalf("session %d of %d: %v", i+1, share, err)
		}
	}
	if _, err := l.Submit(ctx, Submission{Source: `await tool.start("t", "x")`, Owner: "flood"}); !errors.Is(err, ErrOwnerBusy) {
		t.Fatalf("one more of the flood: %v, want ErrOwnerBusy", err)
	}
	if _, err := l.Submit(ctx, Submission{Source: `await tool.start("t", "x")`, Owner: "other"}); err != nil {
		t.Fatalf("another client beside the flood: %v", err)
	}
}
