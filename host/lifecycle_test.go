package host

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/internal/tooltest"
	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/toolspec"
)

func TestClaimReturnsEveryInvocationField(t *testing.T) {
	r, clock := newTestRuntime(t, Config{})
	def := tooltest.Tool(t, toolspec.Spec{
		Name: "text.remote", Description: "Runs in a host-managed worker.",
		MaxAttempts: 3, Deadline: toolspec.Duration(10 * time.Second), MaxOutputBytes: 100,
		Stream: &toolspec.StreamPolicy{MaxChunks: 4, MaxChunkBytes: 64, MaxSourceBytes: 256, MaxReleasedBytes: 256},
	})
	must(t, r.RegisterTool(def))
	stream := NewToolStreamPolicy(4, 64, 256, 256)
	p := start(t, r, "text.remote", "release")
	clock.Advance(4 * time.Second)
	inv := claim(t, r)
	want := ExternalInvocation{
		ID: p.ID(), Tool: "text.remote", Input: "release", Format: FormatText, CallIndex: 1,
		Attempt: 1, AttemptLimit: 3, IdempotencyKey: "sk1-" + testNonce.String() + "-1", OutputLimit: 100,
		Stream: &stream, RemainingDeadline: 6 * time.Second, HasDeadline: true,
	}
	if inv.Stream == nil || *inv.Stream != stream {
		t.Fatalf("stream = %v", inv.Stream)
	}
	if c := inv.Contract; c == nil || *c != (protocol.Contract{Digest: def.Digest()}) {
		t.Fatalf("contract = %+v, want the definition's digest", c)
	}
	inv.Stream, want.Stream, inv.Contract = nil, nil, nil
	if inv != want {
		t.Fatalf("invocation\n got %+v\nwant %+v", inv, want)
	}
	if _, ok := r.ClaimNextExternalTool(); ok {
		t.Fatal("claimed twice")
	}
	res, err := r.CompleteExternalTool(inv.ID, Ok("done"))
	must(t, err)
	if res != nil {
		t.Fatalf("no script, got %+v", res)
	}
	if s := settled(t, p); s.Output != "done" || s.Err != nil {
		t.Fatalf("settlement %+v", s)
	}
	wantOutcomes(t, r, p.ID(), "started", "claimed", "succeeded")
	if r.Pending() != 0 {
		t.Fatalf("pending = %d", r.Pending())
	}
}

func TestFailedResultRejectsPromise(t *testing.T) {
	r, _ := newTestRuntime(t, Config{})
	register(t, r, toolspec.Spec{Name: "text.remote"})
	p := start(t, r, "text.remote", "x")
	_, err := r.CompleteExternalTool(claim(t, r).ID, Fail("disk full"))
	must(t, err)
	s := settled(t, p)
	var te *ToolError
	if !errors.As(s.Err, &te) || te.Kind != ToolFailed || te.Reason != "disk full" || !errors.Is(s.Err, ToolFailed) {
		t.Fatalf("settlement %+v", s)
	}
	wantState(t, r, p.ID(), Failed)
}

func TestCallOnExternalToolDeniedBeforeBudget(t *testing.T) {
	r, _ := newTestRuntime(t, Config{ToolCallBudget: 1})
	register(t, r, toolspec.Spec{Name: "text.remote"})
	register(t, r, toolspec.Spec{Name: "json.remote", Format: toolspec.FormatJSON})
	_, err := r.Call("text.remote", "x")
	wantErr(t, err, ErrExternalToolNotCallable)
	_, err = r.CallJSON("json.remote", json.RawMessage(`{}`))
	wantErr(t, err, ErrExternalToolNotCallable)
	if r.CallsUsed() != 0 {
		t.Fatalf("calls used = %d", r.CallsUsed())
	}
	start(t, r, "text.remote", "x")
	_, err = r.Start("text.remote", "y")
	wantErr(t, err, ErrBudgetExhausted)
	wantOutcomes(t, r, 0, "denied", "denied", "started", "denied")
}

func TestBudgetCountsCallsAndStarts(t *testing.T) {
	r, _ := newTestRuntime(t, Config{ToolCallBudget: 2})
	must(t, r.RegisterLocalTool(NewToolPolicy("text.upper"), func(s string) (string, error) { return strings.ToUpper(s), nil }))
	register(t, r, toolspec.Spec{Name: "text.remote"})
	out, err := r.Call("text.upper", "a")
	must(t, err)
	if out != "A" {
		t.Fatalf("out = %q", out)
	}
	start(t, r, "text.remote", "x")
	_, err = r.Call("text.upper", "b")
	wantErr(t, err, ErrBudgetExhausted)
	_, err = r.Start("text.upper", "b")
	wantErr(t, err, ErrBudgetExhausted)
}

func TestLocalToolsRunThroughPumpGoAPI(t *testing.T) {
	r, _ := newTestRuntime(t, Config{})
	var ran []string
	must(t, r.RegisterLocalTool(NewToolPolicy("text.upper"), func(s string) (string, error) {
		ran = append(ran, s)
		return strings.ToUpper(s), nil
	}))
	register(t, r, toolspec.Spec{Name: "text.remote"})
	a := start(t, r, "text.upper", "a")
	ext := start(t, r, "text.remote", "x")
	b := start(t, r, "text.upper", "b")
	if len(ran) != 0 {
		t.Fatal("handler ran before Pump")
	}
	if inv := claim(t, r); inv.ID != ext.ID() {
		t.Fatalf("claim handed out a local tool: %+v", inv)
	}
	_, err := r.Pump()
	must(t, err)
	if settled(t, a).Output != "A" || settled(t, b).Output != "B" || strings.Join(ran, "") != "ab" {
		t.Fatalf("pump results %v", ran)
	}
	pendingPromise(t, ext)
	_, err = r.CompleteExternalTool(a.ID(), Ok("x"))
	wantErr(t, err, ErrWrongState)
}

func TestLocalToolErrorsAreToolErrors(t *testing.T) {
	r, _ := newTestRuntime(t, Config{})
	must(t, r.RegisterLocalTool(NewToolPolicy("text.fail"), func(string) (string, error) { return "", errors.New("boom") }))
	must(t, r.RegisterLocalTool(NewToolPolicy("text.big").WithOutputLimit(2), func(string) (string, error) { return "big", nil }))
	_, err := r.Call("text.fail", "")
	wantErr(t, err, ToolFailed)
	_, err = r.Call("text.big", "")
	wantErr(t, err, ErrInvalidOutput)
	p := start(t, r, "text.big", "")
	_, err = r.Pump()
	must(t, err)
	wantErr(t, settled(t, p).Err, ToolInvalidOutput)
}

func TestStartJSONValidatedBothWays(t *testing.T) {
	r, _ := newTestRuntime(t, Config{})
	must(t, r.RegisterLocalJSONTool(NewToolPolicy("json.echo"), func(in json.RawMessage) (json.RawMessage, error) { return in, nil }))
	must(t, r.RegisterLocalJSONTool(NewToolPolicy("json.broken"), func(json.RawMessage) (json.RawMessage, error) { return json.RawMessage(`{`), nil }))
	register(t, r, toolspec.Spec{Name: "json.remote", Format: toolspec.FormatJSON})
	_, err := r.StartJSON("json.echo", json.RawMessage(`{"a":`))
	wantErr(t, err, ErrInvalidInput)
	_, err = r.Start("json.echo", `{"a":1}`)
	wantErr(t, err, ErrInvalidInput) // text start of a JSON tool
	_, err = r.StartJSON("text.none", json.RawMessage(`1`))
	wantErr(t, err, ErrUnknownTool)
	if r.CallsUsed() != 0 {
		t.Fatal("invalid input consumed budget")
	}
	out, err := r.CallJSON("json.echo", json.RawMessage(`{"a":1}`))
	must(t, err)
	if string(out) != `{"a":1}` {
		t.Fatalf("out = %s", out)
	}
	_, err = r.CallJSON("json.broken", json.RawMessage(`1`))
	wantErr(t, err, ErrInvalidOutput)

	p, err := r.StartJSON("json.remote", json.RawMessage(`[1,2]`))
	must(t, err)
	inv := claim(t, r)
	if inv.Format != FormatJSON || inv.Input != `[1,2]` {
		t.Fatalf("invocation %+v", inv)
	}
	_, err = r.CompleteExternalTool(inv.ID, Ok(`{"sum":3}`))
	must(t, err)
	if s := settled(t, p); s.Output != `{"sum":3}` {
		t.Fatalf("settlement %+v", s)
	}
}

func TestPendingLimitCountsLocalAndExternal(t *testing.T) {
	r, _ := newTestRuntime(t, Config{MaxPending: 2})
	must(t, r.RegisterLocalTool(NewToolPolicy("text.local"), func(s string) (string, error) { return s, nil }))
	register(t, r, toolspec.Spec{Name: "text.remote"})
	start(t, r, "text.local", "a")
	start(t, r, "text.remote", "b")
	before := r.CallsUsed()
	_, err := r.Start("text.remote", "c")
	wantErr(t, err, ErrPendingLimit)
	_, err = r.Start("text.local", "c")
	wantErr(t, err, ErrPendingLimit)
	if r.CallsUsed() != before {
		t.Fatal("denied start consumed budget")
	}
	// A synchronous call holds no pending slot.
	if _, err := r.Call("text.local", "sync"); err != nil {
		t.Fatal(err)
	}
	_, err = r.Pump()
	must(t, err)
	start(t, r, "text.remote", "c")
}

func TestClaimedOperationsCompleteInAnyOrder(t *testing.T) {
	r, _ := newTestRuntime(t, Config{MaxPending: 3})
	register(t, r, toolspec.Spec{Name: "text.remote"})
	ps := []*Promise{start(t, r, "text.remote", "0"), start(t, r, "text.remote", "1"), start(t, r, "text.remote", "2")}
	invs := []ExternalInvocation{claim(t, r), claim(t, r), claim(t, r)}
	for i, inv := range invs {
		if inv.ID != ps[i].ID() || inv.Input != ps[i].ID().String()[3:] && inv.Input != string(rune('0'+i)) {
			t.Fatalf("claim %d = %+v", i, inv)
		}
	}
	for _, i := range []int{2, 0, 1} {
		_, err := r.CompleteExternalTool(invs[i].ID, Ok("out"+invs[i].Input))
		must(t, err)
	}
	for i, p := range ps {
		if s := settled(t, p); s.Output != "out"+invs[i].Input {
			t.Fatalf("promise %d: %+v", i, s)
		}
	}
}

func TestDroppedPromiseKeepsClaimedOperationReserved(t *testing.T) {
	r, _ := newTestRuntime(t, Config{MaxPending: 1})
	register(t, r, toolspec.Spec{Name: "text.remote"})
	p := start(t, r, "text.remote", "x")
	inv := claim(t, r)
	p.Drop()
	wantState(t, r, inv.ID, Claimed)
	if info, _ := r.Operation(inv.ID); !info.PromiseDropped {
		t.Fatal("drop not recorded")
	}
	_, err := r.Start("text.remote", "y")
	wantErr(t, err, ErrPendingLimit)
	_, err = r.CompleteExternalTool(inv.ID, Ok("done"))
	must(t, err)
	wantOutcomes(t, r, inv.ID, "started", "claimed", "succeeded")
	start(t, r, "text.remote", "y")
}

func TestDroppedPromiseReleasesQueuedOperation(t *testing.T) {
	r, _ := newTestRuntime(t, Config{MaxPending: 1})
	register(t, r, toolspec.Spec{Name: "text.remote"})
	p := start(t, r, "text.remote", "x")
	p.Drop()
	wantState(t, r, p.ID(), Cancelled)
	if _, ok := r.ClaimNextExternalTool(); ok {
		t.Fatal("dropped queued op was claimable")
	}
	start(t, r, "text.remote", "y")
}

func TestSettleHooksRunAtEndOfMethod(t *testing.T) {
	r, _ := newTestRuntime(t, Config{})
	fs := &fakeScript{result: &EvalResult{Value: "ok"}}
	r.setScript(fs)
	register(t, r, toolspec.Spec{Name: "text.remote"})
	var order []string
	var second *Promise
	first, err := r.startOp("text.remote", "a", FormatText, func(s Settlement) {
		order = append(order, "hook:"+s.Output)
		if r.flushing && r.Pending() != 0 {
			t.Errorf("runtime not consistent in hook: pending=%d", r.Pending())
		}
		// The hook may start the next operation, as a continuation would.
		p, err := r.startOp("text.remote", "b", FormatText, func(Settlement) { order = append(order, "hook2") })
		if err != nil {
			t.Error(err)
		}
		second = p
	})
	must(t, err)
	res, err := r.CompleteExternalTool(claim(t, r).ID, Ok("A"))
	must(t, err)
	if res == nil || res.Value != "ok" || fs.resumes != 1 || strings.Join(order, ",") != "hook:A" {
		t.Fatalf("res=%+v resumes=%d order=%v", res, fs.resumes, order)
	}
	pendingPromise(t, second)
	_ = first
	// A method that settles only hook-less promises does not resume.
	p := start(t, r, "text.remote", "c")
	claim(t, r) // second
	inv := claim(t, r)
	if inv.ID != p.ID() {
		t.Fatalf("claimed %s", inv.ID)
	}
	res, err = r.CompleteExternalTool(inv.ID, Ok("C"))
	must(t, err)
	if res != nil || fs.resumes != 1 {
		t.Fatalf("resumed for a hook-less promise: %+v %d", res, fs.resumes)
	}
}
