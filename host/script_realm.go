package host

import (
	"math"
	"slices"
	"strings"

	"github.com/dop251/goja"
)

// Building a goja vm with the script API, its bounded builtins and the
// Promise machinery cost about 100 µs and 57 KB for every session, more
// than the rest of a session's host work together. Slices of script run
// one at a time in the process anyway (the memory meter's gate), so every
// session with the same grants runs in one realm: a vm built and hardened
// once, whose builtins are frozen so that no session can change what
// another sees, and whose global object shows each session its own
// globals (see realmGlobals). A session then costs its own objects only.
//
// A realm is used only under the gate: building it, binding a session to
// it for a slice, and everything JavaScript does.

// realm is one hardened vm and the script API bound in it.
type realm struct {
	key string // the tenant and the sorted grants it binds
	vm  *goja.Runtime
	api *scriptAPI
	// yield is the vm's yield point (script_yield.go), handed to every
	// script it starts.
	yield goja.Value
	// globals is the running session's view of the global object; cur is
	// that session, nil between slices.
	globals *realmGlobals
	cur     *scriptEngine
	// retired: a Go panic went through the vm, so its state is unknown
	// and no new session is bound to it; sessions suspended in it go on.
	// Guarded by sharedSched.mu, as are the fields below.
	retired bool
	// holder is the session whose slice runs or is paused in the vm,
	// from its first quantum to its end; waiters are the tickets of
	// other sessions of the realm that wait for it to end.
	holder  *scriptEngine
	waiters []*ticket
	// sessions counts the sessions bound to the realm.
	sessions int
}

// realmKey names the realms of a tenant's sessions with a grant set,
// whatever the grants' order and repeats.
func realmKey(owner string, grants []string) string {
	g := slices.Clone(grants)
	slices.Sort(g)
	return owner + "\x00" + strings.Join(slices.Compact(g), ",")
}

// realmFor returns a realm of key that no slice holds, building one when
// every realm of key is held (a paused slice keeps its realm). The gate
// is held.
func realmFor(key string, grants []string) *realm {
	s := sharedSched
	s.mu.Lock()
	for _, r := range s.realms[key] {
		if r.holder == nil {
			s.mu.Unlock()
			return r
		}
	}
	s.mu.Unlock()
	r := newRealm(key, grants)
	s.mu.Lock()
	s.realms[key] = append(s.realms[key], r)
	s.mu.Unlock()
	return r
}

// hold makes e the realm's holder for its slice, counting e among its
// sessions if it is new to it.
func (s *scheduler) hold(r *realm, e *scriptEngine, bound bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r.holder = e
	if !bound {
		r.sessions++
	}
}

// unbindRealm counts a session out of r: its script is gone.
func (s *scheduler) unbindRealm(r *realm) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r.sessions--
	s.prune(r)
}

// prune lets go of a realm nobody needs: no session is bound to it and
// no slice holds it, and it is retired or another realm of its key is
// free too (one stays warm for the next session: building one costs
// milliseconds). mu is held.
func (s *scheduler) prune(r *realm) {
	if r.sessions > 0 || r.holder != nil {
		return
	}
	list := s.realms[r.key]
	if !r.retired && !slices.ContainsFunc(list, func(x *realm) bool { return x != r && x.holder == nil }) {
		return
	}
	s.realms[r.key] = slices.DeleteFunc(list, func(x *realm) bool { return x == r })
	if len(s.realms[r.key]) == 0 {
		delete(s.realms, r.key)
	}
}

// newRealm builds a vm, binds the granted capabilities and the bounded
// builtins, hardens every builtin and installs the per-session global
// object. The order matters: what hardening freezes must be in place
// before it.
func newRealm(key string, grants []string) *realm {
	vm := goja.New()
	vm.SetMaxCallStackSize(maxCallStackSize)
	r := &realm{key: key, vm: vm}
	r.api = bindScriptAPI(vm, grants)
	r.api.installBounds()
	r.api.installSymbolRegistry(r)
	r.installDynamicFunctions()
	// Hardening is the host's own script, bound by nothing.
	r.api.bounds = scriptBounds{maxString: math.MaxInt64, maxArray: math.MaxInt64}
	harden(vm)
	r.api.bounds = scriptBounds{}
	r.globals = installGlobals(r)
	r.yield = vm.ToValue(r.yieldPoint)
	return r
}

// bind makes e the realm's running session for one slice: the script API
// acts for it, the builtins bound it by its budget, time and randomness
// are its own, and the global object shows its globals. The gate is held.
func (r *realm) bind(e *scriptEngine) {
	r.cur = e
	r.api.e = e
	r.api.bounds = e.bounds
	r.vm.SetRandSource(e.rand)
	r.vm.SetTimeSource(e.now)
	if e.globals == nil {
		e.globals = r.vm.CreateObject(nil)
		e.deleted = make(map[string]bool)
	}
	r.globals.own, r.globals.gone = e.globals, e.deleted
}

// unbind ends the slice: nothing of the session stays reachable from the
// realm. The gate is held.
func (r *realm) unbind() {
	r.cur, r.api.e = nil, nil
	r.globals.own, r.globals.gone = nil, nil
	r.api.joining = r.api.joining[:0]
	if vmLeftFrames(r.vm) && !resetVM(r.vm) {
		r.retire()
	}
}

// retire takes the realm out of use for new sessions.
func (r *realm) retire() {
	s := sharedSched
	s.mu.Lock()
	defer s.mu.Unlock()
	r.retired = true
	s.realms[r.key] = slices.DeleteFunc(s.realms[r.key], func(x *realm) bool { return x == r })
	if len(s.realms[r.key]) == 0 {
		delete(s.realms, r.key)
	}
}

// installSymbolRegistry gives each session its own Symbol.for registry:
// the engine's is one per vm, so a key one session registered would
// outlive it (memory no session is charged for) and be shared with the
// next.
func (a *scriptAPI) installSymbolRegistry(r *realm) {
	sym := a.vm.Get("Symbol").ToObject(a.vm)
	a.define(sym, "for", a.nativeFunc("for", 1, func(c goja.FunctionCall) goja.Value {
		key := a.toString(c.Argument(0)).String()
		e := r.cur
		if s, ok := e.symbols[key]; ok {
			return s
		}
		s := goja.NewSymbol(key)
		if e.symbols == nil {
			e.symbols = make(map[string]*goja.Symbol)
		}
		e.symbols[key] = s
		return s
	}))
	a.define(sym, "keyFor", a.nativeFunc("keyFor", 1, func(c goja.FunctionCall) goja.Value {
		s, ok := c.Argument(0).(*goja.Symbol)
		if !ok {
			panic(a.vm.NewTypeError(c.Argument(0).String() + " is not a symbol"))
		}
		for k, v := range r.cur.symbols {
			if v == s {
				return a.vm.ToValue(k)
			}
		}
		return goja.Undefined()
	}))
}

// define replaces a builtin method as the engine defines its own.
func (a *scriptAPI) define(obj *goja.Object, name string, f *goja.Object) {
	_ = obj.DefineDataProperty(name, f, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE)
}
