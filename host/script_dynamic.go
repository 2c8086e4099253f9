package host

import (
	"strings"

	"github.com/dop251/goja"
	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/parser"
)

// Function(...) and the constructors of async and generator functions
// (goja has no async generators)
// compile code while the script runs, which goja would compile without
// yield points: `new Function("while (true) {}")()` would hold the engine
// for its whole execution budget. A realm replaces the four constructors
// with ones that build the same source goja does, instrument it as a
// script is (script_yield.go) and compile it in sloppy mode, as the
// language's own constructors do.

// dynamicKinds are the constructors replaced: how to reach the builtin,
// and what the source of the function it makes starts with.
var dynamicKinds = []struct{ reach, kind, name string }{
	{"Function", "function", "Function"},
	{"(async function () {}).constructor", "async function", "AsyncFunction"},
	{"(function* () {}).constructor", "function*", "GeneratorFunction"},
}

// installDynamicFunctions replaces the function constructors of the
// realm's vm; it runs before the realm is hardened.
func (r *realm) installDynamicFunctions() {
	vm := r.vm
	for _, k := range dynamicKinds {
		v, err := vm.RunString(k.reach)
		if err != nil {
			panic("host: reaching " + k.name + ": " + err.Error())
		}
		orig := v.ToObject(vm)
		proto := orig.Get("prototype").ToObject(vm)
		repl := vm.ToValue(r.dynamicFunction(k.kind)).ToObject(vm)
		_ = repl.DefineDataProperty("prototype", proto, goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_FALSE)
		// The attributes the language gives them (writable,
		// configurable, enumerable).
		_ = repl.DefineDataProperty("name", vm.ToValue(k.name), goja.FLAG_FALSE, goja.FLAG_TRUE, goja.FLAG_FALSE)
		_ = repl.DefineDataProperty("length", vm.ToValue(1), goja.FLAG_FALSE, goja.FLAG_TRUE, goja.FLAG_FALSE)
		writable := goja.FLAG_FALSE
		if k.name == "Function" {
			writable = goja.FLAG_TRUE
		}
		_ = proto.DefineDataProperty("constructor", repl, writable, goja.FLAG_TRUE, goja.FLAG_FALSE)
		if k.name == "Function" {
			if err := vm.GlobalObject().DefineDataProperty("Function", repl, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE); err != nil {
				panic("host: replacing Function: " + err.Error())
			}
		}
	}
}

// dynamicFunction is a constructor of functions of kind from source text.
func (r *realm) dynamicFunction(kind string) func(goja.ConstructorCall) *goja.Object {
	return func(c goja.ConstructorCall) *goja.Object {
		vm := r.vm
		var src strings.Builder
		src.WriteString("(" + kind + " anonymous(")
		for i, a := range c.Arguments {
			if i == len(c.Arguments)-1 {
				break
			}
			if i > 0 {
				src.WriteByte(',')
			}
			src.WriteString(a.String())
		}
		src.WriteString("\n) {\n")
		if n := len(c.Arguments); n > 0 {
			src.WriteString(c.Arguments[n-1].String())
		}
		src.WriteString("\n})")
		tree, err := parser.ParseFile(nil, "anonymous", src.String(), 0)
		if err == nil && !oneFunction(tree) {
			err = errUnbalanced
		}
		if err != nil {
			panic(r.syntaxError(err.Error()))
		}
		prg, err := compileYielding(tree, false)
		if err != nil {
			panic(r.syntaxError(err.Error()))
		}
		wrapper, err := vm.RunProgram(prg)
		if err != nil {
			panic(err)
		}
		start, _ := goja.AssertFunction(wrapper)
		fn, err := start(goja.Undefined(), r.yield)
		if err != nil {
			panic(err)
		}
		return fn.ToObject(vm)
	}
}

// oneFunction reports whether tree is the one function literal the
// constructor's source should be, not code its arguments closed it on.
func oneFunction(tree *ast.Program) bool {
	if len(tree.Body) != 1 {
		return false
	}
	es, ok := tree.Body[0].(*ast.ExpressionStatement)
	if !ok {
		return false
	}
	_, ok = es.Expression.(*ast.FunctionLiteral)
	return ok
}

// syntaxError is a SyntaxError of the realm, to throw.
func (r *realm) syntaxError(msg string) *goja.Object {
	ctor, _ := goja.AssertConstructor(r.vm.Get("SyntaxError"))
	obj, err := ctor(nil, r.vm.ToValue(msg))
	if err != nil {
		panic(err)
	}
	return obj
}
