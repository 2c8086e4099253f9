package host

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/splashfabric/splashfabric/internal/tooltest"
	"github.com/splashfabric/splashfabric/toolspec"
)

func TestToolCallOnExternalToolIsDeniedBeforeBudget(t *testing.T) {
	tests := []struct {
		name, call string
	}{
		{"tool.call", `tool.call("text.remote", "x")`},
		{"tool.call_json", `tool.call_json("json.remote", {a: 1})`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := scriptRuntime(t, Config{ToolCallBudget: 1})
			if err := r.RegisterTool(tooltest.Tool(t, toolspec.Spec{Name: "json.remote", Format: toolspec.FormatJSON})); err != nil {
				t.Fatal(err)
			}
			res := evalScript(t, r, `
				let denied = "";
				try { `+tt.call+` } catch (e) { denied = e.message }
				assert(denied != "", "external call was not denied");
				let out = await tool.start("text.remote", "release");
				denied + " | " + out`)
			wantScriptSuspended(t, res)
			inv := claimForScript(t, r)
			res = completeForScript(t, r, inv.ID, Ok("done"))
			if !res.Completed() || !strings.HasSuffix(res.Value, " | done") {
				t.Fatalf("script result %+v, want the denial then done", res)
			}
			if !strings.Contains(res.Value, ErrExternalToolNotCallable.Error()) {
				t.Fatalf("denial %q does not name ErrExternalToolNotCallable", res.Value)
			}
		})
	}
}

func TestUncaughtDenialUnwrapsToSentinel(t *testing.T) {
	r := scriptRuntime(t, Config{})
	res := evalScript(t, r, `tool.call("text.remote", "x")`)
	se := wantScriptFailed(t, res, "tool.call")
	if !errors.Is(se, ErrExternalToolNotCallable) {
		t.Fatalf("ScriptError %v does not unwrap to ErrExternalToolNotCallable", se)
	}
}

func TestStartJSONRoundTrip(t *testing.T) {
	r := scriptRuntime(t, Config{})
	if err := r.RegisterTool(tooltest.Tool(t, toolspec.Spec{Name: "json.remote", Format: toolspec.FormatJSON})); err != nil {
		t.Fatal(err)
	}
	res := evalScript(t, r, `
		let out = await tool.start_json("json.remote", {query: "q", n: 2, tags: ["a"]});
		assert(out.count === 3 && out.items[1] === "y", "unexpected output " + JSON.stringify(out));
		out`)
	wantScriptSuspended(t, res)
	inv := claimForScript(t, r)
	var in map[string]any
	if err := json.Unmarshal([]byte(inv.Input), &in); err != nil {
		t.Fatalf("input %q is not JSON: %v", inv.Input, err)
	}
	if inv.Input != `{"query":"q","n":2,"tags":["a"]}` {
		t.Fatalf("input = %s, want the script's value as JSON", inv.Input)
	}
	res = completeForScript(t, r, inv.ID, Ok(`{"count":3,"items":["x","y"]}`))
	wantScriptCompleted(t, res, `{"count":3,"items":["x","y"]}`)
}

func TestStartJSONRejectsBadValues(t *testing.T) {
	tests := []struct {
		name, source, wantErr string
	}{
		{"unserialisable input", `await tool.start_json("json.remote", undefined)`, "not JSON-serialisable"},
		{"cyclic input", `let a = {}; a.a = a; await tool.start_json("json.remote", a)`, "TypeError"},
		{"text input to text start", `await tool.start("text.remote", 5)`, "must be a string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := scriptRuntime(t, Config{})
			if err := r.RegisterTool(tooltest.Tool(t, toolspec.Spec{Name: "json.remote", Format: toolspec.FormatJSON})); err != nil {
				t.Fatal(err)
			}
			wantScriptFailed(t, evalScript(t, r, tt.source), tt.wantErr)
			if _, ok := r.ClaimNextExternalTool(); ok {
				t.Fatal("a rejected input started an operation")
			}
		})
	}
}

func TestStartJSONInvalidOutputFailsScript(t *testing.T) {
	r := scriptRuntime(t, Config{})
	if err := r.RegisterTool(tooltest.Tool(t, toolspec.Spec{Name: "json.remote", Format: toolspec.FormatJSON})); err != nil {
		t.Fatal(err)
	}
	wantScriptSuspended(t, evalScript(t, r, `await tool.start_json("json.remote", 1)`))
	inv := claimForScript(t, r)
	res := completeForScript(t, r, inv.ID, Ok(`{not json`))
	se := wantScriptFailed(t, res, "json.remote")
	var te *ToolError
	if !errors.As(se, &te) {
		t.Fatalf("ScriptError %v does not unwrap to a *ToolError", se)
	}
}

func TestScriptSeesOnlyGrantedCapabilities(t *testing.T) {
	tests := []struct {
		name   string
		grants []string
		want   string
	}{
		{"default grants", nil, "object function"},
		{"tool only", []string{GrantTool}, "object undefined"},
		{"assert only", []string{GrantAssert}, "undefined function"},
		{"nothing", []string{}, "undefined undefined"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := scriptRuntime(t, Config{Grants: tt.grants})
			wantScriptCompleted(t, evalScript(t, r, "typeof tool + ' ' + typeof assert"), tt.want)
		})
	}
	t.Run("ungranted use fails", func(t *testing.T) {
		r := scriptRuntime(t, Config{Grants: []string{GrantAssert}})
		se := wantScriptFailed(t, evalScript(t, r, specExample1Script), "tool is not defined")
		if !errors.Is(se, ErrCapabilityDenied) {
			t.Fatalf("ScriptError %v does not wrap ErrCapabilityDenied", se)
		}
		if _, ok := r.ClaimNextExternalTool(); ok {
			t.Fatal("an ungranted script started an operation")
		}
	})
}

func TestScriptCannotReplaceCapabilities(t *testing.T) {
	tests := []struct {
		name, source, wantErr string
	}{
		{"assign tool", `tool = null`, "TypeError"},
		{"replace tool.start", `tool.start = () => "fake"`, "TypeError"},
		{"delete assert", `delete globalThis.assert`, "TypeError"},
		{"leak a global", `leaked = 1`, "ReferenceError"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := scriptRuntime(t, Config{})
			wantScriptFailed(t, evalScript(t, r, tt.source), tt.wantErr)
			// The next script on the runtime sees the capabilities intact.
			wantScriptCompleted(t, evalScript(t, r, `typeof tool.start + " " + typeof assert + " " + typeof leaked`),
				"function function undefined")
		})
	}
}

func TestStartJSONContractValidatedBothWays(t *testing.T) {
	in := json.RawMessage(`{"type":"object","required":["query"],"properties":{"query":{"type":"string"}}}`)
	out := json.RawMessage(`{"type":"object","required":["count"],"properties":{"count":{"type":"integer"}}}`)
	tests := []struct {
		name    string
		input   string     // script expression
		result  ToolResult // delivered if the start succeeded
		want    string     // script result
		started bool
	}{
		{"valid both ways", `{query: "q"}`, Ok(`{"count":2}`), "ok 2", true},
		{"input breaks the contract", `{query: 5}`, ToolResult{}, "thrown tool.start_json: " + ErrInvalidInput.Error(), false},
		{"output breaks the contract", `{query: "q"}`, Ok(`{"count":"two"}`), "rejected invalid_output", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := scriptRuntime(t, Config{})
			register(t, r, toolspec.Spec{Name: "json.remote", Description: "contract", Format: toolspec.FormatJSON, InputSchema: in, OutputSchema: out})
			res := evalScript(t, r, `
				let p;
				try { p = tool.start_json("json.remote", `+tt.input+`) } catch (e) { return "thrown " + e.message }
				try { return "ok " + (await p).count } catch (e) { return "rejected " + e.kind }`)
			if tt.started {
				wantScriptSuspended(t, res)
				res = completeForScript(t, r, claimForScript(t, r).ID, tt.result)
			}
			if !res.Completed() || !strings.HasPrefix(res.Value, tt.want) {
				t.Fatalf("script result %+v, want prefix %q", res, tt.want)
			}
		})
	}
}
