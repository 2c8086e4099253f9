package host

import (
	"slices"

	"github.com/dop251/goja"
)

// hiddenGlobals are the globals of goja a script does not get. GoError is
// the engine's own; binary buffers allocate their whole size in one
// call and no tool speaks them (tools take and return text and JSON).
// eval is hidden because an indirect eval declares its let, const and
// class bindings in the vm's global scope, which every session of a realm
// shares and no global object stands in front of.
var hiddenGlobals = map[string]bool{
	"GoError": true, "ArrayBuffer": true, "DataView": true, "SharedArrayBuffer": true,
	"Int8Array": true, "Uint8Array": true, "Uint8ClampedArray": true, "Int16Array": true, "Uint16Array": true,
	"Int32Array": true, "Uint32Array": true, "Float32Array": true, "Float64Array": true,
	"BigInt64Array": true, "BigUint64Array": true,
	"eval": true,
}

// realmGlobals is the global object every session of a realm sees: a
// proxy of goja's own, whose builtins are frozen and shared, in front of
// which the running session's own globals (own) are read and written.
// What one session assigns, defines or deletes on globalThis is in its
// own object, so the next session of the realm never sees it.
//
// No script may get hold of goja's global object itself, which shows
// every hidden global and would take writes for all sessions. A getter
// reached through it would run with it as this, so it has no prototype
// (what it inherited from Object.prototype is looked up there, with
// Object.prototype as this) and its prototype cannot be set through the
// proxy.
type realmGlobals struct {
	own *goja.Object // the running session's globals; nil between slices
	// gone are the builtin globals the running session deleted.
	gone map[string]bool
	// fixed are the builtin globals no session may replace or delete:
	// the capabilities, and the non-configurable values of the language
	// (undefined, NaN, Infinity).
	fixed map[string]bool
	// keys are the builtin globals a script sees, in goja's order.
	keys []string
}

// installGlobals makes the realm's global object the proxy. The gate is
// held.
func installGlobals(r *realm) *realmGlobals {
	vm := r.vm
	base := vm.GlobalObject()
	objProto := base.Prototype()
	_ = base.SetPrototype(nil)
	g := &realmGlobals{fixed: map[string]bool{}}
	gopd, _ := goja.AssertFunction(base.Get("Object").ToObject(vm).Get("getOwnPropertyDescriptor"))
	describe := func(obj *goja.Object, name string) goja.PropertyDescriptor {
		d, err := gopd(goja.Undefined(), obj, vm.ToValue(name))
		if err != nil {
			panic(err)
		}
		return descriptorOf(d)
	}
	for _, k := range base.GetOwnPropertyNames() {
		if hiddenGlobals[k] {
			continue
		}
		g.keys = append(g.keys, k)
		if describe(base, k).Configurable != goja.FLAG_TRUE {
			g.fixed[k] = true
		}
	}
	// own reports whether the session has its own global name; its
	// object has no prototype, so whatever Get finds is its own.
	own := func(name string) bool {
		return g.own != nil && g.own.Get(name) != nil
	}
	// shared reports whether the session sees the builtin global name.
	shared := func(target *goja.Object, name string) bool {
		return !g.gone[name] && target.Get(name) != nil
	}
	get := func(target *goja.Object, name string) goja.Value {
		if g.own != nil {
			if v := g.own.Get(name); v != nil {
				return v
			}
		}
		if g.gone[name] {
			return nil
		}
		if v := target.Get(name); v != nil {
			return v
		}
		return objProto.Get(name)
	}
	var global *goja.Object // the proxy, once made
	proxy := vm.NewProxy(base, &goja.ProxyTrapConfig{
		Get: func(target *goja.Object, name string, _ goja.Value) goja.Value {
			if hiddenGlobals[name] {
				return goja.Undefined()
			}
			return get(target, name)
		},
		Has: func(target *goja.Object, name string) bool {
			return !hiddenGlobals[name] && get(target, name) != nil
		},
		Set: func(target *goja.Object, name string, value goja.Value, receiver goja.Value) bool {
			if hiddenGlobals[name] {
				return false
			}
			if recv, ok := receiver.(*goja.Object); !ok || recv != global {
				// Assigned through an object that inherits from
				// the global object: the object gets it.
				if ok {
					return recv.DefineDataProperty(name, value, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_TRUE) == nil
				}
				return false
			}
			if g.own == nil || g.fixed[name] {
				return false
			}
			if own(name) {
				return g.own.Set(name, value) == nil
			}
			if shared(target, name) {
				// Assigning a builtin keeps its attributes, as
				// it would on an unshared global object.
				d := describe(target, name)
				if d.Writable != goja.FLAG_TRUE {
					return false
				}
				return g.own.DefineDataProperty(name, value, goja.FLAG_TRUE, goja.FLAG_TRUE, d.Enumerable) == nil
			}
			delete(g.gone, name)
			return g.own.DefineDataProperty(name, value, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_TRUE) == nil
		},
		GetPrototypeOf: func(*goja.Object) *goja.Object { return objProto },
		SetPrototypeOf: func(*goja.Object, *goja.Object) bool { return false },
		GetOwnPropertyDescriptor: func(target *goja.Object, name string) goja.PropertyDescriptor {
			if hiddenGlobals[name] {
				return goja.PropertyDescriptor{}
			}
			if own(name) {
				return describe(g.own, name)
			}
			if g.gone[name] {
				return goja.PropertyDescriptor{}
			}
			return describe(target, name)
		},
		DefineProperty: func(target *goja.Object, name string, d goja.PropertyDescriptor) bool {
			if hiddenGlobals[name] || g.fixed[name] || g.own == nil || d.Getter != nil || d.Setter != nil {
				return false
			}
			delete(g.gone, name)
			// A session's globals stay configurable: the proxy may
			// not report as fixed what its target (the shared
			// global) does not have.
			return g.own.DefineDataProperty(name, d.Value, d.Writable, goja.FLAG_TRUE, d.Enumerable) == nil
		},
		DeleteProperty: func(target *goja.Object, name string) bool {
			if hiddenGlobals[name] {
				return true
			}
			if own(name) && g.own.Delete(name) != nil {
				return false
			}
			if g.fixed[name] {
				return false
			}
			if g.own != nil && shared(target, name) {
				// The builtin stays for the other sessions.
				g.gone[name] = true
			}
			return true
		},
		OwnKeys: func(*goja.Object) *goja.Object {
			keys := make([]any, 0, len(g.keys))
			for _, k := range g.keys {
				if !g.gone[k] {
					keys = append(keys, k)
				}
			}
			if g.own != nil {
				for _, k := range g.own.GetOwnPropertyNames() {
					if !slices.Contains(g.keys, k) {
						keys = append(keys, k)
					}
				}
			}
			return vm.NewArray(keys...)
		},
	})
	global = vm.ToValue(proxy).(*goja.Object)
	vm.SetGlobalObject(global)
	// Hardening read globalThis before the proxy existed, which made it
	// goja's own object.
	_ = base.DefineDataProperty("globalThis", global, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE)
	return g
}

// descriptorOf reads a descriptor object as Object.getOwnPropertyDescriptor
// returns it, by its own properties only; undefined is the empty
// descriptor.
func descriptorOf(v goja.Value) goja.PropertyDescriptor {
	obj, ok := v.(*goja.Object)
	if !ok {
		return goja.PropertyDescriptor{}
	}
	var d goja.PropertyDescriptor
	for _, k := range obj.Keys() {
		f := obj.Get(k)
		switch k {
		case "value":
			d.Value = f
		case "get":
			d.Getter = f
		case "set":
			d.Setter = f
		case "writable":
			d.Writable = goja.ToFlag(f.ToBoolean())
		case "enumerable":
			d.Enumerable = goja.ToFlag(f.ToBoolean())
		case "configurable":
			d.Configurable = goja.ToFlag(f.ToBoolean())
		}
	}
	return d
}
