package host

import (
	"testing"

	"github.com/dop251/goja"

	"github.com/splashfabric/splashfabric/toolspec"
)

// jsonTestAPI returns the script bindings of a runtime whose vm exists.
func jsonTestAPI(t *testing.T) *scriptAPI {
	t.Helper()
	r := scriptRuntime(t, Config{})
	wantScriptCompleted(t, evalScript(t, r, `"ready"`), "ready")
	return r.script.(*scriptEngine).api
}

// shapeOf renders a value with everything a script could tell apart:
// types, -0, own keys in order with their attributes, prototypes.
const shapeOf = `(function shape(v) {
	if (typeof v !== "object" || v === null) {
		return typeof v + ":" + (Object.is(v, -0) ? "-0" : String(v));
	}
	const proto = Object.getPrototypeOf(v) === Array.prototype ? "array" :
		Object.getPrototypeOf(v) === Object.prototype ? "object" : "other";
	return proto + "{" + Reflect.ownKeys(v).map(k => {
		const d = Object.getOwnPropertyDescriptor(v, k);
		return String(k) + (d.writable ? "w" : "") + (d.enumerable ? "e" : "") + (d.configurable ? "c" : "") +
			"=" + ("value" in d ? shape(d.value) : "accessor");
	}).join(",") + "}";
})`

func TestParseJSONMatchesBuiltin(t *testing.T) {
	tests := []struct{ name, text string }{
		{"nested", `{"a":1,"b":[true,false,null],"c":{"d":"x"}}`},
		{"key order", `{"b":1,"a":2,"1":3,"0":4}`},
		{"repeated key", `{"a":1,"b":2,"a":3}`},
		{"proto key", `{"__proto__":{"x":1},"y":2}`},
		{"negative zero", `-0`},
		{"exponent", `1.5e2`},
		{"big integer", `123456789012345678901234567890`},
		{"lone surrogate", `"\ud800x"`},
		{"unicode", `"é😀\u00e9"`},
		{"empty containers", `[[],{}]`},
		{"whitespace", " [1, [2, [3]]] \n"},
		{"number out of range", `1e400`},
		{"trailing token", `1 2`},
		{"trailing comma", `[1,]`},
		{"unterminated", `{"a":`},
		{"empty", ``},
	}
	a := jsonTestAPI(t)
	shape, ok := goja.AssertFunction(mustRun(t, a.vm, shapeOf))
	if !ok {
		t.Fatal("shape is not a function")
	}
	builtin, _ := goja.AssertFunction(mustRun(t, a.vm, `(function (text) {
		try { return JSON.parse(text) } catch (e) { return {thrown: String(e)} }
	})`))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, err := builtin(goja.Undefined(), a.vm.ToValue(tt.text))
			must(t, err)
			got, err := a.parseJSON(tt.text)
			if thrown := thrownBy(want); thrown != "" {
				if err == nil || err.Error() != thrown {
					t.Fatalf("parseJSON error = %v, JSON.parse threw %q", err, thrown)
				}
				return
			}
			must(t, err)
			wantShape, err := shape(goja.Undefined(), want)
			must(t, err)
			gotShape, err := shape(goja.Undefined(), got)
			must(t, err)
			if gotShape.String() != wantShape.String() {
				t.Fatalf("parseJSON gives %s, JSON.parse %s", gotShape, wantShape)
			}
		})
	}
}

func TestStringifyJSONMatchesBuiltin(t *testing.T) {
	tests := []struct{ name, expr string }{
		{"object", `({b: 1, a: [1, "x", null, undefined, () => 1]})`},
		{"undefined", `undefined`},
		{"function", `() => 1`},
		{"symbol", `Symbol("s")`},
		{"toJSON sees the key", `({toJSON(k) { return "key[" + k + "]" }, x: 1})`},
		{"nested toJSON key", `({x: {toJSON(k) { return k }}})`},
		{"toJSON to undefined", `({toJSON() { return undefined }})`},
		{"undefined member", `({a: undefined, b: 2})`},
		{"date", `new Date(0)`},
		{"strings", `"é\ud800\n\"q\""`},
		{"negative zero", `-0`},
		{"not a number", `NaN`},
		{"boxed", `[new Number(3), new String("s"), new Boolean(false)]`},
		{"inherited toJSON", `(() => { const p = {toJSON() { return "from proto" }}; return Object.create(p) })()`},
		{"bigint", `1n`},
		{"cycle", `(() => { const a = {}; a.a = a; return a })()`},
		{"throwing toJSON", `({toJSON() { throw new RangeError("no") }})`},
	}
	a := jsonTestAPI(t)
	builtin, _ := goja.AssertFunction(mustRun(t, a.vm, `(function (v) {
		try { return JSON.stringify(v) } catch (e) { return {thrown: String(e)} }
	})`))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := mustRun(t, a.vm, tt.expr)
			want, err := builtin(goja.Undefined(), v)
			must(t, err)
			got, err := a.stringifyJSON(v)
			if thrown := thrownBy(want); thrown != "" {
				ex, ok := err.(*goja.Exception)
				if !ok || ex.Value().String() != thrown {
					t.Fatalf("stringifyJSON error = %v, JSON.stringify threw %q", err, thrown)
				}
				return
			}
			must(t, err)
			if goja.IsUndefined(want) != goja.IsUndefined(got) || got.String() != want.String() {
				t.Fatalf("stringifyJSON gives %v, JSON.stringify %v", got, want)
			}
		})
	}
}

// TestHostJSONIgnoresScriptGlobals pins that a script replacing JSON
// changes only its own calls, not how the host converts tool inputs, tool
// outputs and results, in this Eval or a later one. JSON's own methods
// cannot be replaced at all: the builtins are frozen.
func TestHostJSONIgnoresScriptGlobals(t *testing.T) {
	r := scriptRuntime(t, Config{})
	register(t, r, toolspec.Spec{Name: "json.remote", Format: toolspec.FormatJSON})
	res := evalScript(t, r, `
		try { JSON.stringify = () => '"forged"' } catch (e) {}
		JSON = {stringify: () => '"forged"', parse: () => "forged"};
		const out = await tool.start_json("json.remote", {a: [1, "x"]});
		out.b`)
	wantScriptSuspended(t, res)
	inv := claimForScript(t, r)
	if inv.Input != `{"a":[1,"x"]}` {
		t.Fatalf("input = %s, want the value as JSON", inv.Input)
	}
	wantScriptCompleted(t, completeForScript(t, r, inv.ID, Ok(`{"b":"parsed"}`)), "parsed")
	wantScriptCompleted(t, evalScript(t, r, `JSON = undefined; ({x: [1, {y: null}]})`), `{"x":[1,{"y":null}]}`)
}

// TestHostErrorsIgnoreScriptGlobals pins that the host's errors stay
// genuine Errors after a script replaced the global Error, which is why
// the vm's Error is taken before any script runs.
func TestHostErrorsIgnoreScriptGlobals(t *testing.T) {
	r := scriptRuntime(t, Config{})
	wantScriptCompleted(t, evalScript(t, r, `Error = class { constructor() { return {forged: true} } }; "replaced"`), "replaced")
	res := evalScript(t, r, `
		let got;
		try { tool.start("missing.tool", "x") } catch (e) { got = String(e) + " " + (e.forged === true) }
		got`)
	wantScriptCompleted(t, res, `Error: tool.start: host: unknown tool: "missing.tool" false`)
}

func mustRun(t *testing.T, vm *goja.Runtime, src string) goja.Value {
	t.Helper()
	v, err := vm.RunString(src)
	if err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	return v
}

// thrownBy returns what a test wrapper caught, or "" for a plain result.
func thrownBy(v goja.Value) string {
	obj, ok := v.(*goja.Object)
	if !ok {
		return ""
	}
	thrown := obj.Get("thrown")
	if thrown == nil || goja.IsUndefined(thrown) {
		return ""
	}
	return thrown.String()
}
