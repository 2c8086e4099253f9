package host

import (
	"fmt"

	"github.com/dop251/goja"
)

// hardenScript freezes everything a script of the realm can reach without
// making it: every builtin reachable from the global object, and the
// intrinsics reachable only from values (the prototypes of async and
// generator functions, of iterators, %ThrowTypeError%). The global object
// itself is left alone; realmGlobals stands in front of it.
//
// A frozen prototype's data property cannot be shadowed by assignment on
// an object that inherits it (in strict code `err.name = "X"` would
// throw), so the properties scripts commonly assign on their own objects
// become accessors first: reading gives the builtin, assigning on an
// inheriting object defines the object's own property, and assigning on
// the prototype itself throws as a frozen property does.
const hardenScript = `(function () {
	"use strict";
	const { getPrototypeOf, getOwnPropertyDescriptor, defineProperty, freeze } = Object;
	const ownKeys = Reflect.ownKeys;
	const G = globalThis;

	function overridable(obj, name) {
		const d = getOwnPropertyDescriptor(obj, name);
		if (!d || !("value" in d) || !d.configurable) {
			return;
		}
		const value = d.value;
		defineProperty(obj, name, {
			get: function () { return value; },
			set: function (v) {
				if (this === obj || (typeof this !== "object" && typeof this !== "function") || this === null) {
					throw new TypeError("Cannot assign to read only property '" + String(name) + "' of a builtin");
				}
				defineProperty(this, name, { value: v, writable: true, enumerable: true, configurable: true });
			},
			enumerable: d.enumerable,
			configurable: true,
		});
	}
	for (const k of ownKeys(Object.prototype)) {
		overridable(Object.prototype, k);
	}
	for (const k of ["constructor", "toString", "call", "apply", "bind"]) {
		overridable(Function.prototype, k);
	}
	for (const name of ["Error", "EvalError", "RangeError", "ReferenceError", "SyntaxError", "TypeError", "URIError", "AggregateError"]) {
		const c = G[name];
		if (typeof c === "function") {
			for (const k of ["constructor", "name", "message", "toString"]) {
				overridable(c.prototype, k);
			}
		}
	}
	for (const k of ownKeys(G)) {
		const c = getOwnPropertyDescriptor(G, k).value;
		if (typeof c === "function" && c.prototype && typeof c.prototype === "object") {
			for (const m of ["constructor", "toString", "valueOf"]) {
				overridable(c.prototype, m);
			}
		}
	}

	const roots = [
		async function () {}, function* () {}, (function* () {})(),
		[][Symbol.iterator](), ""[Symbol.iterator](),
		new Map()[Symbol.iterator](), new Set()[Symbol.iterator](),
		/./[Symbol.matchAll](""),
		getOwnPropertyDescriptor(function () { "use strict"; return arguments; }(), "callee"),
	];
	for (const k of ownKeys(G)) {
		const d = getOwnPropertyDescriptor(G, k);
		roots.push(d.value, d.get, d.set);
	}
	const seen = new Set([G]);
	let n = 0;
	while (roots.length > 0) {
		const o = roots.pop();
		if ((typeof o !== "object" && typeof o !== "function") || o === null || seen.has(o)) {
			continue;
		}
		seen.add(o);
		n++;
		roots.push(getPrototypeOf(o));
		for (const k of ownKeys(o)) {
			const d = getOwnPropertyDescriptor(o, k);
			roots.push(d.value, d.get, d.set);
		}
		freeze(o);
	}
	return n;
})()`

// harden runs hardenScript in a fresh vm; a vm it cannot harden must not
// run anybody's script.
func harden(vm *goja.Runtime) {
	if _, err := vm.RunString(hardenScript); err != nil {
		panic(fmt.Sprintf("host: hardening a script realm: %v", err))
	}
}
