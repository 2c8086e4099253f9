package host

import (
	"slices"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/toolspec"
)

func TestExpireResolvesTimedOutOperations(t *testing.T) {
	r, clock := newTestRuntime(t, Config{})
	register(t, r, toolspec.Spec{Name: "text.slow", Deadline: toolspec.Duration(2 * time.Second)})
	register(t, r, toolspec.Spec{Name: "text.fast", Deadline: toolspec.Duration(time.Second)})
	register(t, r, toolspec.Spec{Name: "text.forever"})
	slow := start(t, r, "text.slow", "queued")
	fast := start(t, r, "text.fast", "claimed")
	forever := start(t, r, "text.forever", "x")
	claim(t, r) // slow is claimed; fast stays queued behind it
	clock.Advance(500 * time.Millisecond)
	if ids, _ := r.ExpireTimedOutTools(); len(ids) != 0 {
		t.Fatalf("expired early: %v", ids)
	}
	clock.Advance(2 * time.Second)
	ids, res := r.ExpireTimedOutTools()
	if !slices.Equal(ids, []ExternalToolID{fast.ID(), slow.ID()}) || res != nil {
		t.Fatalf("expired %v res %v", ids, res)
	}
	for _, p := range []*Promise{slow, fast} {
		wantErr(t, settled(t, p).Err, ToolTimedOut)
		wantState(t, r, p.ID(), TimedOut)
		wantOutcomes(t, r, p.ID(), append(map[bool][]string{true: {"started", "claimed"}, false: {"started"}}[p == slow], "timed_out")...)
	}
	pendingPromise(t, forever)
	if r.Pending() != 1 {
		t.Fatalf("pending %d", r.Pending())
	}
}

func TestResultAfterDeadlineBecomesTimeout(t *testing.T) {
	r, clock := newTestRuntime(t, Config{})
	register(t, r, toolspec.Spec{Name: "text.remote", Deadline: toolspec.Duration(time.Second)})
	p := start(t, r, "text.remote", "x")
	inv := claim(t, r)
	clock.Advance(time.Second)
	_, err := r.CompleteExternalTool(inv.ID, Ok("done"))
	must(t, err)
	wantErr(t, settled(t, p).Err, ToolTimedOut)
	wantOutcomes(t, r, inv.ID, "started", "claimed", "late_result", "timed_out")
	if _, ok := r.NextDeadline(); ok {
		t.Fatal("resolved op kept its deadline")
	}
}

func TestPumpChecksDeadlineBeforeHandler(t *testing.T) {
	r, clock := newTestRuntime(t, Config{})
	ran := false
	must(t, r.RegisterLocalTool(NewToolPolicy("text.local").WithDeadline(time.Second), func(s string) (string, error) {
		ran = true
		return s, nil
	}))
	p := start(t, r, "text.local", "x")
	clock.Advance(time.Second)
	_, err := r.Pump()
	must(t, err)
	if ran {
		t.Fatal("handler ran after its deadline")
	}
	wantErr(t, settled(t, p).Err, ToolTimedOut)
}

func TestNextDeadline(t *testing.T) {
	r, clock := newTestRuntime(t, Config{})
	if _, ok := r.NextDeadline(); ok {
		t.Fatal("deadline with no operations")
	}
	register(t, r, toolspec.Spec{Name: "text.a", Deadline: toolspec.Duration(3 * time.Second)})
	register(t, r, toolspec.Spec{Name: "text.b", Deadline: toolspec.Duration(time.Second)})
	a := start(t, r, "text.a", "x")
	clock.Advance(time.Second)
	b := start(t, r, "text.b", "x")
	if d, ok := r.NextDeadline(); !ok || !d.Equal(t0.Add(2*time.Second)) {
		t.Fatalf("next deadline %v %v", d, ok)
	}
	_, err := r.CancelExternalTool(b.ID())
	must(t, err)
	if d, _ := r.NextDeadline(); !d.Equal(t0.Add(3 * time.Second)) {
		t.Fatalf("next deadline %v after cancel", d)
	}
	_, err = r.CancelExternalTool(a.ID())
	must(t, err)
	if _, ok := r.NextDeadline(); ok {
		t.Fatal("deadline left after cancelling all")
	}
}

func TestClaimSkipsExpiredOperations(t *testing.T) {
	r, clock := newTestRuntime(t, Config{})
	register(t, r, toolspec.Spec{Name: "text.short", Deadline: toolspec.Duration(time.Second)})
	register(t, r, toolspec.Spec{Name: "text.long"})
	short := start(t, r, "text.short", "x")
	long := start(t, r, "text.long", "y")
	clock.Advance(time.Second)
	if inv := claim(t, r); inv.ID != long.ID() {
		t.Fatalf("claimed %s", inv.ID)
	}
	wantState(t, r, short.ID(), Queued)
	ids, _ := r.ExpireTimedOutTools()
	if !slices.Equal(ids, []ExternalToolID{short.ID()}) {
		t.Fatalf("expired %v", ids)
	}
}
