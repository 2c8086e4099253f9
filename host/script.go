package host

import (
	"errors"
	"fmt"
	"strings"

	"github.com/dop251/goja"
	"github.com/dop251/goja/parser"
)

// scriptEngine runs JavaScript for one Runtime. It is the Runtime's
// scriptDriver: the core settles Promises, calls each one's onSettle hook
// (which only queues the settlement here), then calls afterSettle once,
// and that is when the script's continuations run, inside one budgeted
// slice. All fields belong to the goroutine that owns the Runtime, except
// what budgetTimer documents.
type scriptEngine struct {
	r *Runtime
	// realm is where the session's script runs, chosen at its first
	// slice; vm and api are the realm's. All three are nil until then,
	// and again once a failure dropped what the session held in it.
	realm *realm
	vm    *goja.Runtime
	api   *scriptAPI
	// globals are the session's own globals in its realm (realmGlobals),
	// symbols its Symbol.for registry; made on first use.
	globals *goja.Object
	deleted map[string]bool
	symbols map[string]*goja.Symbol
	// What the realm takes from the session for each slice.
	bounds scriptBounds
	rand   goja.RandSource
	now    goja.Now
	budget budgetTimer
	mem    memoryAccount
	// run holds what a slice does between its turns (script_slice.go).
	run sliceRun

	// main is the promise of the running script's async body; nil when
	// no script is suspended.
	main *goja.Promise
	// gen identifies the current script, so settlements of promises that
	// an earlier script dropped are ignored.
	gen uint64
	// active is true from the start of Eval until the script completes or
	// fails; inSlice from the start of a slice (waiting for its first
	// turn included) to its end.
	active, inSlice bool
	// ready holds settlements queued by onSettle hooks and not yet
	// delivered to JavaScript.
	ready []readySettlement
	// live holds the script's tool promises that have not settled; they
	// are dropped when the script ends, which keeps a claimed operation
	// reserved for the host to finish.
	live map[*Promise]struct{}
	// goErrs maps the Error objects made from Go errors back to them, so
	// a ScriptError can unwrap to the runtime's sentinel or ToolError.
	goErrs map[*goja.Object]error
}

// readySettlement is one tool result on its way to the script's promise.
type readySettlement struct {
	s               Settlement
	json            bool
	resolve, reject func(any) error
}

var _ scriptDriver = (*scriptEngine)(nil)

// maxCallStackSize bounds script recursion; goja's own default is
// unbounded, which would let a runaway recursion exhaust memory before the
// execution budget ends it.
const maxCallStackSize = 4096

// Eval runs source as a script: strict-mode JavaScript with top-level
// `await`, seeing only the capabilities in Config.Grants. It runs until the script
// completes, fails, or awaits a tool promise that is still pending; in
// the last case the result is Suspended and the script resumes inside the
// Runtime method that settles that promise (CompleteExternalTool, Pump,
// ExpireTimedOutTools, ...), which returns the script's new EvalResult.
//
// A completed script's Value is the value of a top-level `return`, or else
// of its final statement when that is an expression: a string as is,
// objects and arrays as JSON text, undefined as "". Script failures,
// syntax errors included, are reported in EvalResult.Err as a
// *ScriptError; the error return is only for misuse: ErrScriptRunning
// while another script is suspended.
func (r *Runtime) Eval(source string) (*EvalResult, error) {
	e, _ := r.script.(*scriptEngine)
	if e == nil {
		e = &scriptEngine{
			r:      r,
			bounds: boundsFor(r.memBudget),
			// Time and randomness come from the runtime, so a replay
			// sees what the first run saw.
			rand:   r.randomFloat,
			now:    r.clock.Now,
			budget: newBudgetTimer(r.execBudget),
			mem:    memoryAccount{budget: r.memBudget},
		}
		r.setScript(e)
	}
	return e.eval(source)
}

// ReleaseScript drops the script engine (its globals in the realm and its
// budget timer) once the script has ended, keeping the runtime's operations,
// audit and settled promises: a finished session holds its summary, not
// its script's objects. It reports whether it released one; while a script is suspended it
// does nothing. A later Eval builds a new engine.
func (r *Runtime) ReleaseScript() bool {
	e, _ := r.script.(*scriptEngine)
	if e == nil || e.active || e.inSlice {
		return false
	}
	sharedMeter.forget(&e.mem)
	if e.realm != nil {
		sharedSched.unbindRealm(e.realm)
	}
	e.stopTimers()
	r.script = nil
	return true
}

// HoldsScript reports whether the runtime holds a script engine: from its
// first Eval until ReleaseScript.
func (r *Runtime) HoldsScript() bool { return r.script != nil }

func (e *scriptEngine) eval(source string) (*EvalResult, error) {
	if e.active {
		return nil, fmt.Errorf("%w: suspended at its await", ErrScriptRunning)
	}
	prg, err := sharedPrograms.get(source)
	if err != nil {
		return &EvalResult{Err: syntaxError(source, err)}, nil
	}
	e.gen++
	e.active = true
	if e.live == nil {
		e.live = make(map[*Promise]struct{})
	}
	return e.slice(func() error {
		v, err := e.vm.RunProgram(prg)
		if err != nil {
			return err
		}
		start, ok := goja.AssertFunction(v)
		if !ok {
			return fmt.Errorf("host: a compiled script is not its wrapper function")
		}
		if v, err = start(goja.Undefined(), e.realm.yield); err != nil {
			return err
		}
		if e.main, ok = v.Export().(*goja.Promise); !ok {
			return fmt.Errorf("host: a script's body is not an async function")
		}
		return nil
	}), nil
}

// dropVM lets go of everything the session holds in its realm (its
// globals, its symbols), so that what a failed script held is garbage by
// the time the slice ends; its next Eval starts afresh. After a Go panic
// the realm itself is retired. The gate is held.
func (e *scriptEngine) dropVM(panicked bool) {
	if panicked && e.realm != nil {
		e.realm.retire()
	}
	if e.realm != nil {
		sharedSched.unbindRealm(e.realm)
	}
	e.realm, e.vm, e.api = nil, nil, nil
	e.globals, e.deleted, e.symbols = nil, nil, nil
	sharedMeter.forget(&e.mem)
}

// enterRealm binds the session to its realm for a slice, choosing the
// realm on the first one (or after dropVM). The gate is held.
func (e *scriptEngine) enterRealm() *goja.Runtime {
	bound := e.realm != nil
	if bound && e.realm.retired && !e.active {
		sharedSched.unbindRealm(e.realm)
		bound = false
	}
	if !bound {
		e.realm = realmFor(realmKey(e.r.owner, e.r.grants), e.r.grants)
		e.vm, e.api = e.realm.vm, e.realm.api
		e.globals, e.deleted, e.symbols = nil, nil, nil
	}
	sharedSched.hold(e.realm, e, bound)
	e.realm.bind(e)
	return e.vm
}

// afterSettle delivers the settlements the core queued through onSettle
// hooks and runs the continuations they release.
func (e *scriptEngine) afterSettle() *EvalResult {
	if e.inSlice {
		// A tool call made by the script settled something; the
		// running slice delivers it before it returns.
		return nil
	}
	if !e.active || len(e.ready) == 0 {
		return nil
	}
	return e.slice(nil)
}

// deliver settles one goja promise with a tool result.
func (e *scriptEngine) deliver(s readySettlement) error {
	if s.s.Err != nil {
		return s.reject(e.api.newError(s.s.Err.Error(), s.s.Err))
	}
	if !s.json {
		return s.resolve(s.s.Output)
	}
	v, err := e.api.parseJSON(s.s.Output)
	if err != nil {
		return s.reject(e.api.newError(fmt.Sprintf("%s: %v", ErrInvalidOutput, err), ErrInvalidOutput))
	}
	return s.resolve(v)
}

// state reads the script's outcome from its main promise.
func (e *scriptEngine) state() *EvalResult {
	switch e.main.State() {
	case goja.PromiseStateFulfilled:
		v, err := e.api.completionText(e.main.Result())
		if err != nil {
			return e.end(&EvalResult{Err: e.failure(err)})
		}
		return e.end(&EvalResult{Value: v})
	case goja.PromiseStateRejected:
		return e.end(&EvalResult{Err: e.rejection(e.main.Result())})
	}
	if len(e.live) == 0 && len(e.ready) == 0 {
		// Nothing the host does can resume it; holding the session
		// would only block the next Eval.
		return e.end(&EvalResult{Err: &ScriptError{
			Message: "script awaits a promise that no tool operation will settle",
		}})
	}
	return &EvalResult{Suspended: true}
}

// end closes the current script: its unsettled tool promises are dropped
// (claimed operations stay reserved in the core until the host completes
// or cancels them) and the runtime accepts the next Eval.
func (e *scriptEngine) end(res *EvalResult) *EvalResult {
	for p := range e.live {
		p.onSettle = nil
		p.Drop()
	}
	clear(e.live)
	e.main = nil
	e.active = false
	clear(e.ready)
	e.ready = e.ready[:0]
	clear(e.goErrs)
	return res
}

// startOp starts a tool operation for the running script and returns the
// script's promise for it.
func (e *scriptEngine) startOp(tool, input string, format Format) (*goja.Promise, error) {
	jsp, resolve, reject := e.vm.NewPromise()
	gen := e.gen
	var p *Promise
	hook := func(s Settlement) {
		p.onSettle = nil // let the settled promise's JS objects go
		if e.gen != gen || !e.active {
			return // its script is gone
		}
		delete(e.live, p)
		e.ready = append(e.ready, readySettlement{s: s, json: format == FormatJSON, resolve: resolve, reject: reject})
	}
	p, err := e.r.startOp(tool, input, format, hook)
	if err != nil {
		return nil, err
	}
	e.live[p] = struct{}{}
	return jsp, nil
}

// uncatchable turns an error goja could not hand to the script into a
// failure.
func (e *scriptEngine) uncatchable(err error) *ScriptError {
	var ie *goja.InterruptedError
	if errors.As(err, &ie) {
		if cause, ok := ie.Value().(error); ok {
			return &ScriptError{Message: cause.Error(), Stack: ie.String(), Err: cause}
		}
	}
	var so *goja.StackOverflowError
	if errors.As(err, &so) {
		return &ScriptError{
			Message: fmt.Sprintf("stack overflow: more than %d nested calls", maxCallStackSize),
			Stack:   so.String(),
			Err:     err,
		}
	}
	return &ScriptError{Message: err.Error(), Err: err}
}

// failure wraps a Go-side error met while finishing the script.
func (e *scriptEngine) failure(err error) *ScriptError {
	return &ScriptError{Message: err.Error(), Err: err}
}

// rejection describes the value the script's body rejected with.
func (e *scriptEngine) rejection(v goja.Value) *ScriptError {
	se := &ScriptError{Message: e.api.describe(v)}
	if c, ok := e.api.deniedCapability(v, e.r.grants); ok {
		se.Err = fmt.Errorf("%w: %q", ErrCapabilityDenied, c)
	}
	if obj, ok := v.(*goja.Object); ok {
		if cause, ok := e.goErrs[obj]; ok {
			se.Err = cause
		}
		if stack := obj.Get("stack"); stack != nil && !goja.IsUndefined(stack) {
			se.Stack = stack.String()
		}
	}
	return se
}

// syntaxError reports a script that does not parse, at the position in
// the script's own text rather than in its async wrapper.
func syntaxError(source string, err error) *ScriptError {
	var list parser.ErrorList
	if !errors.As(err, &list) || len(list) == 0 {
		return &ScriptError{Message: "syntax error: " + err.Error(), Err: err}
	}
	pos, msg := list[0].Position, list[0].Message
	if pos.Line == 1 {
		pos.Column -= len(scriptPrefix)
	}
	if lines := strings.Count(source, "\n") + 1; pos.Line > lines {
		// The parser ran into the wrapper's closing lines: the script
		// itself ended early.
		return &ScriptError{Message: "syntax error at end of script: " + msg, Err: err}
	}
	return &ScriptError{
		Message: fmt.Sprintf("syntax error at line %d, column %d: %s", pos.Line, pos.Column, msg),
		Err:     err,
	}
}
