package workflow_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/internal/tooltest"
	"github.com/splashfabric/splashfabric/toolspec"
	"github.com/splashfabric/splashfabric/workflow"
)

var t0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// A script that uses every kind of input: time and chance, two calls in
// flight, a retry, a third call that depends on the first answer, a local
// call, a cancellation and an expiry.
const story = `
let r = Math.random(), t = Date.now();
let a = tool.start("text.remote", "a"), b = tool.start("text.remote", "b");
let x = await a;
let echoed = tool.call("text.echo", x);
let c = tool.start("text.remote", "c:" + echoed);
let d = tool.start("text.remote", "d");
let e = tool.start("text.slow", "e");
let outs = [x, await b, await c];
try { await d } catch (err) { outs.push("d " + err.message.includes("cancel")) }
try { await e } catch (err) { outs.push("e " + err.message.includes("deadline")) }
return JSON.stringify({outs, r, t, later: Date.now()});
`

// register returns what registers the story's tools in a runtime: two
// external ones from their definitions and a local echo.
func register(tb testing.TB) func(*host.Runtime) error {
	catalog := tooltest.Catalog[*host.Runtime](tb,
		toolspec.Spec{Name: "text.remote", MaxAttempts: 3},
		toolspec.Spec{Name: "text.slow", Deadline: toolspec.Duration(time.Minute)})
	return func(rt *host.Runtime) error {
		return errors.Join(catalog(rt),
			rt.RegisterLocalTool(host.NewToolPolicy("text.echo"), func(in string) (string, error) { return "echo " + in, nil }))
	}
}

// snapshot is what a replay of a prefix must reproduce.
type snapshot struct {
	state string
	live  []string // key@attempt of each live operation
}

// firstRun drives story as a host would, writing its ledger, and returns
// the ledger with the snapshot after each entry.
func firstRun(t *testing.T) ([]workflow.Entry, []snapshot) {
	t.Helper()
	clock := host.NewManualClock(t0)
	seed := host.RandomSeed{7}
	nonce := host.NewCapabilitySessionNonce([16]byte{1, 2})
	rt := host.NewRuntime(host.Config{Clock: clock, RandomSeed: &seed, SessionNonce: &nonce})
	if err := register(t)(rt); err != nil {
		t.Fatal(err)
	}
	l := workflow.NewLedger(t0, workflow.Submitted{Source: story, Nonce: nonce.Bytes(), Seed: seed})
	res, err := rt.Eval(story)
	if err != nil {
		t.Fatal(err)
	}
	snaps := []snapshot{snap(rt, res, nil)}
	ops := map[string]host.ExternalToolID{}
	var live []host.ExternalToolID
	prepareAll := func() {
		for {
			inv, ok := rt.ClaimNextExternalTool()
			if !ok {
				return
			}
			ops[inv.Input] = inv.ID
			live = append(live, inv.ID)
			if _, err := l.Prepare(clock.Now(), workflow.Prepared{Op: inv.ID, CallIndex: inv.CallIndex, Tool: inv.Tool, Input: inv.Input, Key: inv.IdempotencyKey, Request: fmt.Sprint("req-", inv.ID)}); err != nil {
				t.Fatal(err)
			}
			snaps = append(snaps, snap(rt, res, live))
		}
	}
	apply := func(a workflow.Applied) {
		clock.Advance(time.Second)
		var out *host.EvalResult
		var err error
		switch a.Kind {
		case workflow.InputSucceeded:
			out, err = rt.CompleteExternalTool(a.Op, host.Ok(a.Output))
		case workflow.InputRetryTransient:
			_, err = rt.RetryExternalTool(a.Op, host.RetryTransient)
		case workflow.InputCancelRequested:
			_, err = rt.RequestExternalToolCancellation(a.Op)
		case workflow.InputCancelConfirmed:
			out, err = rt.ConfirmExternalToolCancellation(a.Op)
		case workflow.InputExpire:
			clock.Advance(time.Minute)
			_, out = rt.ExpireTimedOutTools()
		}
		if err != nil {
			t.Fatalf("%s: %v", a.Kind, err)
		}
		for rt.LocalPending() {
			if r, err := rt.Pump(); err != nil {
				t.Fatal(err)
			} else if r != nil {
				out = r
			}
		}
		if out != nil {
			res = out
		}
		if _, err := l.Apply(clock.Now(), a); err != nil {
			t.Fatal(err)
		}
		snaps = append(snaps, snap(rt, res, live))
		prepareAll()
	}
	prepareAll()
	apply(workflow.Applied{Kind: workflow.InputRetryTransient, Op: ops["a"]})
	apply(workflow.Applied{Kind: workflow.InputSucceeded, Op: ops["b"], Output: "B"})
	apply(workflow.Applied{Kind: workflow.InputSucceeded, Op: ops["a"], Output: "A"})
	apply(workflow.Applied{Kind: workflow.InputCancelRequested, Op: ops["d"]})
	apply(workflow.Applied{Kind: workflow.InputSucceeded, Op: ops["c:echo A"], Output: "C"})
	apply(workflow.Applied{Kind: workflow.InputCancelConfirmed, Op: ops["d"]})
	apply(workflow.Applied{Kind: workflow.InputExpire})
	if !res.Completed() {
		t.Fatalf("first run did not complete: %+v", res)
	}
	return l.Entries(0), snaps
}

// operations is what snap reads: a runtime, or a restored session.
type operations interface {
	Operation(host.ExternalToolID) (host.OperationInfo, bool)
}

func snap(rt operations, res *host.EvalResult, ids []host.ExternalToolID) snapshot {
	s := snapshot{state: "suspended"}
	switch {
	case res.Failed():
		s.state = "failed: " + res.Err.Error()
	case res.Completed():
		s.state = "completed: " + res.Value
	}
	for _, id := range ids {
		if info, ok := rt.Operation(id); ok && !info.State.Terminal() {
			inv, _ := rt.Operation(id)
			s.live = append(s.live, fmt.Sprintf("%s@%d", inv.IdempotencyKey, inv.Attempt))
		}
	}
	return s
}

func TestReplayFromEveryPrefixEndsAsTheFirstRun(t *testing.T) {
	entries, snaps := firstRun(t)
	if !strings.Contains(snaps[len(snaps)-1].state, `"outs":["A","B","C","d true","e true"]`) {
		t.Fatalf("first run ended %s", snaps[len(snaps)-1].state)
	}
	for k := 1; k <= len(entries); k++ {
		got, err := workflow.Restore(entries[:k], workflow.ReplayConfig{Register: register(t)})
		if err != nil {
			t.Fatalf("prefix %d: %v", k, err)
		}
		var ids []host.ExternalToolID
		for _, op := range got.Ops() {
			ids = append(ids, op.ID)
		}
		want := snaps[k-1]
		have := snap(got, got.Result(), ids)
		if have.state != want.state || !slices.Equal(have.live, want.live) {
			t.Fatalf("prefix %d of %d:\n got %+v\nwant %+v", k, len(entries), have, want)
		}
	}
}

func TestReplayDivergenceDispatchesNothing(t *testing.T) {
	entries, _ := firstRun(t)
	changed := slices.Clone(entries)
	sub := *changed[0].Submitted
	sub.Source = strings.Replace(sub.Source, `"b"`, `"B!"`, 1)
	changed[0].Submitted = &sub
	got, err := workflow.Restore(changed, workflow.ReplayConfig{Register: register(t)})
	if err != nil {
		t.Fatal(err)
	}
	if !got.Result().Failed() || !errors.Is(got.Result().Err, host.ErrNondeterministic) {
		t.Fatalf("result %+v, want nondeterministic", got.Result())
	}
	if n := got.Len(); n != 0 {
		t.Fatalf("a diverged replay handed back %d operations to dispatch", n)
	}
	if ops := got.Claim(); len(ops) != 0 {
		t.Fatalf("a diverged replay left %d operations to claim", len(ops))
	}
	if rd := got.Ready(); len(rd.Publish) != 0 || rd.Append != nil {
		t.Fatalf("a diverged replay has work ready: %+v", rd)
	}
}

// A replayed session runs for the tenant it was submitted for, so its
// slices are scheduled and its realm shared as its first run's were.
func TestReplayRunsForItsOwner(t *testing.T) {
	entries, _ := firstRun(t)
	owned := slices.Clone(entries)
	sub := *owned[0].Submitted
	sub.Owner = "team-a"
	owned[0].Submitted = &sub
	got, err := workflow.Restore(owned, workflow.ReplayConfig{Register: register(t)})
	if err != nil {
		t.Fatal(err)
	}
	if got.Owner() != "team-a" {
		t.Fatalf("replayed for %q, want team-a", got.Owner())
	}
}

func TestReplayRefusesChangedToolDefinitions(t *testing.T) {
	entries, _ := firstRun(t)
	pinned := slices.Clone(entries)
	sub := *pinned[0].Submitted
	sub.Tools = map[string]string{"text.remote": "sha256:aa"}
	pinned[0].Submitted = &sub
	_, err := workflow.Restore(pinned, workflow.ReplayConfig{Register: register(t), Digests: map[string]string{"text.remote": "sha256:bb"}})
	if !errors.Is(err, workflow.ErrReplay) {
		t.Fatalf("err = %v, want ErrReplay", err)
	}
}

func TestLedgerRefusesStaleAndInvalidEntries(t *testing.T) {
	l := workflow.NewLedger(t0, workflow.Submitted{Source: "1"})
	p := workflow.Prepared{Op: 1, CallIndex: 1, Tool: "t", Key: "k1", Request: "r1"}
	if _, err := l.Prepare(t0, p); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		do   func() error
		want error
	}{
		{"same operation again", func() error { _, err := l.Prepare(t0, p); return err }, workflow.ErrStalePrepared},
		{"an earlier call index", func() error {
			_, err := l.Prepare(t0, workflow.Prepared{Op: 2, CallIndex: 1, Tool: "t", Key: "k", Request: "r"})
			return err
		}, workflow.ErrStalePrepared},
		{"no key", func() error { _, err := l.Prepare(t0, workflow.Prepared{Op: 3, CallIndex: 5, Tool: "t"}); return err }, workflow.ErrInvalidEntry},
		{"an answer to nothing prepared", func() error {
			_, err := l.Apply(t0, workflow.Applied{Kind: workflow.InputSucceeded, Op: 9})
			return err
		}, workflow.ErrInvalidEntry},
		{"an unknown kind", func() error { _, err := l.Apply(t0, workflow.Applied{Kind: "maybe", Op: 1}); return err }, workflow.ErrInvalidEntry},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.do(); !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if l.Len() != 2 {
				t.Fatalf("a refused entry changed the ledger: %d entries", l.Len())
			}
		})
	}
	if _, err := workflow.Resume([]workflow.Entry{{At: t0, Prepared: &p}}); !errors.Is(err, workflow.ErrInvalidEntry) {
		t.Fatalf("a ledger without its submission: %v", err)
	}
}
