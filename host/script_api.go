package host

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"

	"github.com/dop251/goja"
)

// Script capabilities a Config may grant.
const (
	// GrantTool exposes the tool object: tool.start, tool.start_json,
	// tool.call and tool.call_json.
	GrantTool = "tool"
	// GrantAssert exposes assert(cond, message?).
	GrantAssert = "assert"
)

// scriptAPI holds the bindings one realm gives its scripts, and the
// builtins they lean on.
type scriptAPI struct {
	e  *scriptEngine // the session whose slice runs; nil between slices
	vm *goja.Runtime
	// errorCtor is the vm's Error, taken before any script runs so that
	// host errors stay genuine Errors whatever a script later assigns to
	// the global.
	errorCtor goja.Constructor
	// stringify is made on first use (see stringifyJSON).
	stringify goja.Callable

	// What the bounded builtins use (see installBounds): the vm's
	// RangeError, the arrays being joined (to stop at a cycle) and the
	// default separator.
	bounds     scriptBounds
	rangeError goja.Constructor
	joining    []*goja.Object
	comma      goja.String
}

// bindScriptAPI installs the granted capabilities as globals of vm. An
// ungranted name is not defined at all, so `typeof tool` is "undefined".
// Nothing about stream chunks is bound: a script sees only the terminal
// result of a tool.
func bindScriptAPI(vm *goja.Runtime, grants []string) *scriptAPI {
	a := &scriptAPI{vm: vm}
	a.errorCtor, _ = goja.AssertConstructor(vm.Get("Error"))
	if slices.Contains(grants, GrantTool) {
		tool := vm.NewObject()
		for _, m := range [...]struct {
			name string
			f    func(goja.FunctionCall) goja.Value
		}{{"start", a.start}, {"start_json", a.startJSON}, {"call", a.call}, {"call_json", a.callJSON}} {
			_ = tool.DefineDataProperty(m.name, a.nativeFunc(m.name, 2, m.f), goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_TRUE)
		}
		a.defineGlobal(GrantTool, tool)
	}
	if slices.Contains(grants, GrantAssert) {
		a.defineGlobal(GrantAssert, a.nativeFunc(GrantAssert, 2, a.assert))
	}
	return a
}

// defineGlobal binds a capability that no script can replace or delete,
// since every session of the realm shares it.
func (a *scriptAPI) defineGlobal(name string, v goja.Value) {
	_ = a.vm.GlobalObject().DefineDataProperty(name, v, goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_TRUE)
}

// start is tool.start(name, input) -> Promise<string>.
func (a *scriptAPI) start(c goja.FunctionCall) goja.Value {
	name, input := a.stringArg(c, 0, "tool.start", "name"), a.stringArg(c, 1, "tool.start", "input")
	p, err := a.e.startOp(name, input, FormatText)
	if err != nil {
		panic(a.newError("tool.start: "+err.Error(), err))
	}
	return a.vm.ToValue(p)
}

// startJSON is tool.start_json(name, value) -> Promise<any>: value goes
// out as JSON text and the result comes back parsed.
func (a *scriptAPI) startJSON(c goja.FunctionCall) goja.Value {
	name := a.stringArg(c, 0, "tool.start_json", "name")
	input := a.jsonArg(c, 1, "tool.start_json")
	p, err := a.e.startOp(name, string(input), FormatJSON)
	if err != nil {
		panic(a.newError("tool.start_json: "+err.Error(), err))
	}
	return a.vm.ToValue(p)
}

// call is tool.call(name, input) -> string, for local tools only; the core
// refuses an external tool before it counts against the budget.
func (a *scriptAPI) call(c goja.FunctionCall) goja.Value {
	name, input := a.stringArg(c, 0, "tool.call", "name"), a.stringArg(c, 1, "tool.call", "input")
	out, err := a.e.r.Call(name, input)
	if err != nil {
		panic(a.newError("tool.call: "+err.Error(), err))
	}
	return a.vm.ToValue(out)
}

// callJSON is tool.call_json(name, value) -> any.
func (a *scriptAPI) callJSON(c goja.FunctionCall) goja.Value {
	name := a.stringArg(c, 0, "tool.call_json", "name")
	input := a.jsonArg(c, 1, "tool.call_json")
	out, err := a.e.r.CallJSON(name, input)
	if err != nil {
		panic(a.newError("tool.call_json: "+err.Error(), err))
	}
	v, err := a.parseJSON(string(out))
	if err != nil {
		panic(a.newError(fmt.Sprintf("tool.call_json: %s: %v", ErrInvalidOutput, err), ErrInvalidOutput))
	}
	return v
}

// assert is assert(cond, message?): a falsy cond throws an Error whose
// message starts with "assertion failed".
func (a *scriptAPI) assert(c goja.FunctionCall) goja.Value {
	if c.Argument(0).ToBoolean() {
		return goja.Undefined()
	}
	msg := "assertion failed"
	if m := c.Argument(1); !goja.IsUndefined(m) {
		msg += ": " + m.String()
	}
	panic(a.newError(msg, nil))
}

// stringArg insists on a string argument: tool names and text inputs are
// never coerced, so `tool.start(name)` without input is an error, not
// "undefined".
func (a *scriptAPI) stringArg(c goja.FunctionCall, i int, fn, what string) string {
	v := c.Argument(i)
	if s, ok := v.(goja.String); ok {
		return s.String() // a primitive string, read without boxing it
	}
	_, isSym := v.(*goja.Symbol)
	s, ok := v.Export().(string)
	if !ok || isSym {
		panic(a.vm.NewTypeError(fmt.Sprintf("%s: %s must be a string, got %s", fn, what, a.typeOf(v))))
	}
	return s
}

// jsonArg serialises a JSON tool input as JSON.stringify does, so keys
// keep their order and numbers their form.
func (a *scriptAPI) jsonArg(c goja.FunctionCall, i int, fn string) json.RawMessage {
	v := c.Argument(i)
	out, err := a.stringifyJSON(v)
	if err != nil {
		panic(err) // a throwing toJSON, or an interrupt: let goja propagate it
	}
	if goja.IsUndefined(out) {
		panic(a.vm.NewTypeError(fmt.Sprintf("%s: input %s is not JSON-serialisable", fn, a.typeOf(v))))
	}
	return json.RawMessage(out.String())
}

// newError makes a script Error; cause, when given, is what a ScriptError
// unwraps to if the script lets this error escape. A *ToolError also shows
// in the script as err.tool and err.kind.
func (a *scriptAPI) newError(msg string, cause error) *goja.Object {
	obj, err := a.errorCtor(nil, a.vm.ToValue(msg))
	if err != nil {
		panic(err)
	}
	if cause != nil {
		a.remember(obj, cause)
		var te *ToolError
		if errors.As(cause, &te) {
			_ = obj.Set("tool", te.Tool)
			_ = obj.Set("kind", string(te.Kind))
		}
	}
	return obj
}

// remember records cause as the Go error behind the script Error obj.
func (a *scriptAPI) remember(obj *goja.Object, cause error) {
	if a.e.goErrs == nil {
		a.e.goErrs = make(map[*goja.Object]error)
	}
	a.e.goErrs[obj] = cause
}

// completionText renders a completed script's value for EvalResult.Value.
func (a *scriptAPI) completionText(v goja.Value) (string, error) {
	if v == nil || goja.IsUndefined(v) {
		return "", nil
	}
	if _, isObj := v.(*goja.Object); !isObj {
		return v.String(), nil
	}
	if _, isFunc := goja.AssertFunction(v); isFunc {
		return v.String(), nil
	}
	out, err := a.stringifyJSON(v)
	if err != nil {
		return "", fmt.Errorf("script result is not JSON-serialisable: %w", err)
	}
	return out.String(), nil
}

// describe is how a thrown value reads in a ScriptError: an Error's
// "Name: message", anything else as String().
func (a *scriptAPI) describe(v goja.Value) string {
	if v == nil {
		return "undefined"
	}
	return v.String()
}

// typeOf names a value's type the way a script author would.
func (a *scriptAPI) typeOf(v goja.Value) string {
	switch {
	case v == nil || goja.IsUndefined(v):
		return "undefined"
	case goja.IsNull(v):
		return "null"
	}
	if _, ok := goja.AssertFunction(v); ok {
		return "function"
	}
	if _, ok := v.(*goja.Object); ok {
		return "object"
	}
	if _, ok := v.(*goja.Symbol); ok {
		return "symbol"
	}
	switch v.ExportType().Kind() {
	case reflect.Bool:
		return "boolean"
	case reflect.String:
		return "string"
	case reflect.Int64, reflect.Float64:
		return "number"
	}
	// The only other primitive; the engine's own type name is not the
	// script's business.
	return "bigint"
}

// scriptCapabilities are all the names a grant can expose.
var scriptCapabilities = []string{GrantTool, GrantAssert}

// deniedCapability tells whether a thrown value is the ReferenceError of a
// script reaching for a capability it was not granted, and which one.
func (a *scriptAPI) deniedCapability(v goja.Value, grants []string) (string, bool) {
	obj, ok := v.(*goja.Object)
	if !ok || obj.Get("name") == nil || obj.Get("name").String() != "ReferenceError" {
		return "", false
	}
	msg := obj.Get("message").String()
	for _, c := range scriptCapabilities {
		if msg == c+" is not defined" && !slices.Contains(grants, c) {
			return c, true
		}
	}
	return "", false
}
