package host

import (
	"errors"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/internal/tooltest"
	"github.com/splashfabric/splashfabric/toolspec"
)

func TestEndlessLoopIsInterrupted(t *testing.T) {
	tests := []struct {
		name   string
		source string
		resume bool // the loop runs after the first await
	}{
		{"in eval", "for (;;) {}", false},
		{"after resume", `await tool.start("text.remote", "x"); while (true) {}`, true},
		{"in a then callback", `await tool.start("text.remote", "x").then(() => { for (;;) {} })`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := scriptRuntime(t, Config{ExecutionBudget: 100 * time.Millisecond})
			res := evalScript(t, r, tt.source)
			if tt.resume {
				wantScriptSuspended(t, res)
				res = completeForScript(t, r, claimForScript(t, r).ID, Ok("done"))
			}
			se := wantScriptFailed(t, res, "execution budget")
			if !errors.Is(se, ErrExecutionBudget) {
				t.Fatalf("ScriptError %v does not wrap ErrExecutionBudget", se)
			}
			// The runtime is usable again: the interrupt did not outlive its slice.
			wantScriptCompleted(t, evalScript(t, r, "let s = 0; for (let i = 0; i < 10; i++) s += i; s"), "45")
		})
	}
}

func TestThrownErrorIsScriptFailure(t *testing.T) {
	tests := []struct {
		name, source, wantMsg string
	}{
		{"Error", `throw new Error("boom")`, "Error: boom"},
		{"string", `throw "plain"`, "plain"},
		{"after await", `await tool.start("text.remote", "x"); throw new TypeError("late")`, "TypeError: late"},
		{"reference error", `missing()`, "missing is not defined"},
		{"syntax error", `let = = 1`, "syntax error at line 1, column 7: Unexpected token ="},
		{"syntax error on a later line", "let a = 1;\nlet b = );", "syntax error at line 2, column 9"},
		{"unterminated script", "if (true) {", "syntax error at end of script"},
		{"stack overflow", `function f() { return f() + 1 } f()`, "stack"},
		{"assert with message", `assert(1 === 2, "one is not two")`, "assertion failed: one is not two"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := scriptRuntime(t, Config{})
			res := evalScript(t, r, tt.source)
			if res.Suspended {
				res = completeForScript(t, r, claimForScript(t, r).ID, Ok("done"))
			}
			wantScriptFailed(t, res, tt.wantMsg)
		})
	}
}

func TestRejectedPromiseIsScriptFailure(t *testing.T) {
	tests := []struct {
		name, source string
		result       ToolResult // delivered to the claimed operation, if any
		wantMsg      string
		wantToolErr  bool
	}{
		{"failed tool", `await tool.start("text.remote", "x")`, Fail("worker crashed"), "worker crashed", true},
		{"script rejection", `await Promise.reject(new RangeError("nope"))`, ToolResult{}, "RangeError: nope", false},
		{"rejection after success", `await tool.start("text.remote", "x"); await Promise.reject("no")`, Ok("ok"), "no", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := scriptRuntime(t, Config{})
			res := evalScript(t, r, tt.source)
			if res.Suspended {
				res = completeForScript(t, r, claimForScript(t, r).ID, tt.result)
			}
			se := wantScriptFailed(t, res, tt.wantMsg)
			var te *ToolError
			if got := errors.As(se, &te); got != tt.wantToolErr {
				t.Fatalf("errors.As(*ToolError) = %v, want %v (err %v)", got, tt.wantToolErr, se)
			}
		})
	}
	t.Run("caught tool failure exposes tool and kind", func(t *testing.T) {
		r := scriptRuntime(t, Config{})
		wantScriptSuspended(t, evalScript(t, r, `
			try { await tool.start("text.remote", "x") } catch (e) { return [e instanceof Error, e.tool, typeof e.kind].join(" ") }`))
		wantScriptCompleted(t, completeForScript(t, r, claimForScript(t, r).ID, Fail("bad")), "true text.remote string")
	})
}

// TestHostEndingsReachScriptAsRejections: every way the host ends an
// operation other than success rejects the awaiting script's promise with
// an Error carrying the tool and the kind.
func TestHostEndingsReachScriptAsRejections(t *testing.T) {
	tests := []struct {
		name     string
		end      func(t *testing.T, r *Runtime, clock *ManualClock, id ExternalToolID) *EvalResult
		wantKind ToolErrorKind
	}{
		{"failure", func(t *testing.T, r *Runtime, _ *ManualClock, id ExternalToolID) *EvalResult {
			return completeForScript(t, r, id, Fail("worker crashed"))
		}, ToolFailed},
		{"expiry", func(t *testing.T, r *Runtime, clock *ManualClock, id ExternalToolID) *EvalResult {
			clock.Advance(2 * time.Second)
			_, res := r.ExpireTimedOutTools()
			return res
		}, ToolTimedOut},
		{"late result", func(t *testing.T, r *Runtime, clock *ManualClock, id ExternalToolID) *EvalResult {
			clock.Advance(2 * time.Second)
			return completeForScript(t, r, id, Ok("done"))
		}, ToolTimedOut},
		{"direct cancel", func(t *testing.T, r *Runtime, _ *ManualClock, id ExternalToolID) *EvalResult {
			res, err := r.CancelExternalTool(id)
			if err != nil {
				t.Fatal(err)
			}
			return res
		}, ToolCancelled},
		{"confirmed cancellation", func(t *testing.T, r *Runtime, _ *ManualClock, id ExternalToolID) *EvalResult {
			if _, err := r.RequestExternalToolCancellation(id); err != nil {
				t.Fatal(err)
			}
			res, err := r.ConfirmExternalToolCancellation(id)
			if err != nil {
				t.Fatal(err)
			}
			return res
		}, ToolCancelled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := NewManualClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
			r := NewRuntime(Config{Clock: clock})
			if err := r.RegisterTool(tooltest.Tool(t, toolspec.Spec{Name: "text.remote", Deadline: toolspec.Duration(time.Second)})); err != nil {
				t.Fatal(err)
			}
			wantScriptSuspended(t, evalScript(t, r, `
				try { await tool.start("text.remote", "x"); return "resolved" }
				catch (e) { return [e.tool, e.kind].join(" ") }`))
			res := tt.end(t, r, clock, claimForScript(t, r).ID)
			wantScriptCompleted(t, res, "text.remote "+string(tt.wantKind))
		})
	}
}
