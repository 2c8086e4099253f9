package host

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/internal/tooltest"
	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/toolspec"
)

func scriptRuntime(t *testing.T, cfg Config) *Runtime {
	t.Helper()
	r := NewRuntime(cfg)
	register(t, r, toolspec.Spec{Name: "text.remote"})
	return r
}

func evalScript(t *testing.T, r *Runtime, source string) *EvalResult {
	t.Helper()
	res, err := r.Eval(source)
	if err != nil {
		t.Fatalf("Eval: %v", err)
	}
	if res == nil {
		t.Fatal("Eval returned a nil result")
	}
	return res
}

func claimForScript(t *testing.T, r *Runtime) ExternalInvocation {
	t.Helper()
	inv, ok := r.ClaimNextExternalTool()
	if !ok {
		t.Fatal("no external invocation to claim")
	}
	return inv
}

func completeForScript(t *testing.T, r *Runtime, id ExternalToolID, res ToolResult) *EvalResult {
	t.Helper()
	out, err := r.CompleteExternalTool(id, res)
	if err != nil {
		t.Fatalf("CompleteExternalTool(%v): %v", id, err)
	}
	return out
}

func wantScriptSuspended(t *testing.T, res *EvalResult) {
	t.Helper()
	if res == nil || !res.Suspended || res.Err != nil {
		t.Fatalf("want a suspended script, got %+v", res)
	}
}

func wantScriptCompleted(t *testing.T, res *EvalResult, value string) {
	t.Helper()
	if res == nil || !res.Completed() {
		t.Fatalf("want a completed script, got %+v", res)
	}
	if res.Value != value {
		t.Fatalf("Value = %q, want %q", res.Value, value)
	}
}

// wantScriptFailed checks that the script failed with a *ScriptError whose
// message contains msg.

func wantScriptFailed(t *testing.T, res *EvalResult, msg string) *ScriptError {
	t.Helper()
	if res == nil || !res.Failed() || res.Suspended {
		t.Fatalf("want a failed script, got %+v", res)
	}
	var se *ScriptError
	if !errors.As(res.Err, &se) {
		t.Fatalf("Err = %T %v, want *ScriptError", res.Err, res.Err)
	}
	if !strings.Contains(se.Message, msg) {
		t.Fatalf("ScriptError message %q does not contain %q", se.Message, msg)
	}
	return se
}

const specExample1Script = `let output = await tool.start("text.remote", "release"); assert(output == "done")`

func TestSpecExample1ScriptSuspendsAndCompletes(t *testing.T) {
	tests := []struct {
		name    string
		result  ToolResult
		wantErr string // "" when the script completes
	}{
		{name: "done completes", result: Ok("done")},
		{name: "nope fails the assertion", result: Ok("nope"), wantErr: "assertion failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := NewManualClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
			nonce := NewCapabilitySessionNonce([16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
			r := NewRuntime(Config{Clock: clock, SessionNonce: &nonce})
			def := tooltest.Tool(t, toolspec.Spec{
				Name: "text.remote", Description: "Runs in a host-managed worker.",
				MaxAttempts: 3, Deadline: toolspec.Duration(time.Minute), MaxOutputBytes: 4096,
				Stream: &toolspec.StreamPolicy{MaxChunks: 4, MaxChunkBytes: 64, MaxSourceBytes: 256, MaxReleasedBytes: 256},
			})
			must(t, r.RegisterTool(def))
			stream := NewToolStreamPolicy(4, 64, 256, 256)
			wantScriptSuspended(t, evalScript(t, r, specExample1Script))
			clock.Advance(10 * time.Second)

			inv := claimForScript(t, r)
			want := ExternalInvocation{
				ID:                inv.ID,
				Tool:              "text.remote",
				Input:             "release",
				Format:            FormatText,
				CallIndex:         inv.CallIndex,
				Attempt:           1,
				AttemptLimit:      3,
				IdempotencyKey:    fmt.Sprintf("%s%s-%d", IdempotencyKeyPrefix, nonce, inv.CallIndex),
				OutputLimit:       4096,
				Stream:            &stream,
				RemainingDeadline: 50 * time.Second,
				HasDeadline:       true,
				Contract:          &protocol.Contract{Digest: def.Digest()},
			}
			if inv.ID == 0 || !reflect.DeepEqual(inv, want) {
				t.Fatalf("claimed\n %+v\nwant\n %+v", inv, want)
			}

			res := completeForScript(t, r, inv.ID, tt.result)
			if tt.wantErr == "" {
				wantScriptCompleted(t, res, "")
				return
			}
			wantScriptFailed(t, res, tt.wantErr)
		})
	}
}

func TestScriptValue(t *testing.T) {
	tests := []struct {
		name, source, want string
	}{
		{"final expression", "1 + 2", "3"},
		{"parenthesised final expression", "let a = 2;\n(a * 3)", "6"},
		{"explicit return", "return 'x'", "x"},
		{"object as JSON", "({b: [1, 2], a: null})", `{"b":[1,2],"a":null}`},
		{"final awaited expression", "await Promise.resolve(7)", "7"},
		{"statement", "let x = 1", ""},
		{"trailing comment", "'v' // done", "v"},
		{"null", "null", "null"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := scriptRuntime(t, Config{})
			wantScriptCompleted(t, evalScript(t, r, tt.source), tt.want)
		})
	}
}

func TestEvalWhileSuspendedIsRefused(t *testing.T) {
	r := scriptRuntime(t, Config{})
	wantScriptSuspended(t, evalScript(t, r, specExample1Script))
	if _, err := r.Eval("1"); !errors.Is(err, ErrScriptRunning) {
		t.Fatalf("second Eval: err = %v, want ErrScriptRunning", err)
	}
	inv := claimForScript(t, r)
	wantScriptCompleted(t, completeForScript(t, r, inv.ID, Ok("done")), "")
	wantScriptCompleted(t, evalScript(t, r, "'again'"), "again")
}

func TestScriptLocalToolsRunThroughPump(t *testing.T) {
	r := scriptRuntime(t, Config{})
	var ran []string
	err := r.RegisterLocalTool(NewToolPolicy("text.upper"), func(in string) (string, error) {
		ran = append(ran, in)
		return strings.ToUpper(in), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	wantScriptSuspended(t, evalScript(t, r, `
		let sync = tool.call("text.upper", "now");
		let later = await tool.start("text.upper", "later");
		sync + " " + later`))
	if len(ran) != 1 {
		t.Fatalf("before Pump the handler ran for %q, want only the synchronous call", ran)
	}
	if _, ok := r.ClaimNextExternalTool(); ok {
		t.Fatal("a local tool was offered as an external invocation")
	}
	res, err := r.Pump()
	if err != nil {
		t.Fatalf("Pump: %v", err)
	}
	wantScriptCompleted(t, res, "NOW LATER")
}

func TestSeveralClaimedOperationsCompleteInAnyOrder(t *testing.T) {
	r := scriptRuntime(t, Config{MaxPending: 3})
	wantScriptSuspended(t, evalScript(t, r, `
		let outs = await Promise.all(["a", "b", "c"].map(x => tool.start("text.remote", x)));
		outs.join(",")`))
	invs := []ExternalInvocation{claimForScript(t, r), claimForScript(t, r), claimForScript(t, r)}
	for _, i := range []int{2, 0} {
		wantScriptSuspended(t, completeForScript(t, r, invs[i].ID, Ok(strings.ToUpper(invs[i].Input))))
	}
	wantScriptCompleted(t, completeForScript(t, r, invs[1].ID, Ok("B")), "A,B,C")
}

func TestDroppedPromiseLeavesClaimedOperationReserved(t *testing.T) {
	r := scriptRuntime(t, Config{MaxPending: 2})
	wantScriptSuspended(t, evalScript(t, r, `
		tool.start("text.remote", "dropped");
		await tool.start("text.remote", "awaited")`))
	dropped, awaited := claimForScript(t, r), claimForScript(t, r)
	wantScriptCompleted(t, completeForScript(t, r, awaited.ID, Ok("done")), "done")

	// The dropped operation still holds one of the two pending slots.
	wantScriptCompleted(t, evalScript(t, r, `
		tool.start("text.remote", "one");
		try { tool.start("text.remote", "two"); return "started" } catch (e) { return "denied" }`), "denied")
	if _, ok := r.ClaimNextExternalTool(); ok {
		t.Fatal("an operation dropped before its claim was still offered")
	}
	checkScriptOpReserved(t, r, dropped.ID)
	// The host can still finish it; no script is resumed by that.
	if got := completeForScript(t, r, dropped.ID, Ok("late")); got != nil {
		t.Fatalf("completing a dropped operation resumed a script: %+v", got)
	}
}

func TestScriptsCannotSeeChunks(t *testing.T) {
	r := NewRuntime(Config{})
	register(t, r, toolspec.Spec{Name: "text.remote",
		Stream: &toolspec.StreamPolicy{MaxChunks: 8, MaxChunkBytes: 64, MaxSourceBytes: 512, MaxReleasedBytes: 512}})
	wantScriptSuspended(t, evalScript(t, r, `
		let events = [];
		let p = tool.start("text.remote", "release");
		p.then(v => events.push("then:" + v));
		events.push("result:" + await p);
		events.join(",")`))
	inv := claimForScript(t, r)
	for _, text := range []string{"one", "two", "three"} {
		if _, err := r.PushExternalToolChunk(inv.ID, text); err != nil {
			t.Fatalf("PushExternalToolChunk(%q): %v", text, err)
		}
	}
	// The script is still at its await: nothing ran, so a new Eval is refused.
	if _, err := r.Eval("1"); !errors.Is(err, ErrScriptRunning) {
		t.Fatalf("after chunks: Eval err = %v, want ErrScriptRunning", err)
	}
	wantScriptCompleted(t, completeForScript(t, r, inv.ID, Ok("done")), "then:done,result:done")
}

func TestScriptHasNoChunkAPI(t *testing.T) {
	r := scriptRuntime(t, Config{})
	wantScriptCompleted(t, evalScript(t, r, `
		let p = tool.start("text.remote", "x");
		[Object.keys(tool).sort().join(","), Object.getOwnPropertyNames(p).length,
		 typeof p.chunks, typeof p.on, typeof stream].join(" ")`),
		"call,call_json,start,start_json 0 undefined undefined undefined")
}

// checkScriptOpReserved checks that a claimed operation whose promise the script
// dropped is still claimed, still counted, and still in the audit log.
func checkScriptOpReserved(t *testing.T, r *Runtime, id ExternalToolID) {
	t.Helper()
	info, ok := r.Operation(id)
	if !ok || info.State != Claimed {
		t.Fatalf("Operation(%v) = %+v, %v; want it still claimed", id, info, ok)
	}
	var claimed bool
	for _, ev := range r.Audit() {
		if ev.ID == id && ev.Outcome == AuditClaimed {
			claimed = true
		}
	}
	if !claimed {
		t.Fatalf("audit log lost the claim of %v: %+v", id, r.Audit())
	}
}

func TestEvalFromInsideAScriptIsRefused(t *testing.T) {
	r := scriptRuntime(t, Config{})
	var nested error
	err := r.RegisterLocalTool(NewToolPolicy("text.nested"), func(string) (string, error) {
		_, nested = r.Eval("1")
		return "ran", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	wantScriptCompleted(t, evalScript(t, r, `tool.call("text.nested", "")`), "ran")
	if !errors.Is(nested, ErrScriptRunning) {
		t.Fatalf("nested Eval: err = %v, want ErrScriptRunning", nested)
	}
}

func TestAwaitingWhatNoToolSettlesFails(t *testing.T) {
	r := scriptRuntime(t, Config{})
	wantScriptFailed(t, evalScript(t, r, `await new Promise(() => {})`), "no tool operation will settle")
	// A promise chained to a live tool promise is different: it waits.
	wantScriptSuspended(t, evalScript(t, r, `
		let p = tool.start("text.remote", "x");
		await new Promise(resolve => p.then(resolve))`))
	wantScriptCompleted(t, completeForScript(t, r, claimForScript(t, r).ID, Ok("done")), "done")
}
