package host

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/dop251/goja"
)

// A builtin runs as one Go call that neither the execution budget nor the
// memory meter can interrupt: "x".repeat(2**29) allocates its half
// gigabyte in one step. The builtins whose output is not bounded by what
// the script already holds (a count, a length, the same element many
// times) are wrapped here so that a result over the session's bounds is
// refused with a RangeError before anything is allocated, as engines
// refuse a string over their maximum length. Builtins that copy no more
// than the script holds are left alone: the meter sees that growth.

// scriptBounds are the largest results a builtin may make for a session.
type scriptBounds struct {
	maxString int64 // UTF-16 code units
	maxArray  int64 // elements
}

func boundsFor(budget int64) scriptBounds {
	return scriptBounds{maxString: budget / 4, maxArray: budget / 64}
}

// installBounds wraps the unbounded builtins of a fresh vm. The bounds
// themselves are the running session's (realm.bind).
func (a *scriptAPI) installBounds() {
	a.rangeError, _ = goja.AssertConstructor(a.vm.Get("RangeError"))
	a.comma = a.vm.ToValue(",").(goja.String)

	// Prototypes are reached from values rather than from their
	// constructors, which costs building the constructors.
	str := a.vm.ToValue("").ToObject(a.vm).Prototype()
	a.wrap(str, "repeat", 1, a.repeat)
	a.wrap(str, "padStart", 2, a.pad)
	a.wrap(str, "padEnd", 2, a.pad)
	a.wrap(str, "split", 2, a.split)
	a.wrapIterator(str, "String iterator", a.stringLength)

	arr := a.vm.Get("Array").ToObject(a.vm)
	proto := arr.Get("prototype").ToObject(a.vm)
	_ = proto.DefineDataProperty("join", a.nativeFunc("join", 1, a.join), goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE)
	a.wrap(proto, "fill", 1, a.fill)
	a.wrap(proto, "concat", 1, a.concat)
	a.wrap(proto, "keys", 0, a.iterated)
	a.wrap(proto, "entries", 0, a.iterated)
	a.wrapIterator(proto, "Array iterator", a.arrayLength)
	a.wrap(arr, "from", 1, a.from)

	fn := a.vm.Get("Error").(*goja.Object).Prototype() // built for errorCtor already
	a.wrap(fn, "apply", 2, a.argList(1))

	r := a.vm.Get("Reflect").ToObject(a.vm)
	a.wrap(r, "apply", 3, a.argList(2))
	a.wrap(r, "construct", 2, a.argList(1))
}

// nativeFunc makes a Go function a script sees as a builtin: named as
// the script calls it, printing as `function name() { [native code] }`,
// where goja would name it after the Go function.
func (a *scriptAPI) nativeFunc(name string, length int, f func(goja.FunctionCall) goja.Value) *goja.Object {
	obj := a.vm.ToValue(f).(*goja.Object)
	_ = obj.DefineDataProperty("name", a.vm.ToValue(name), goja.FLAG_FALSE, goja.FLAG_TRUE, goja.FLAG_FALSE)
	_ = obj.DefineDataProperty("length", a.vm.ToValue(length), goja.FLAG_FALSE, goja.FLAG_TRUE, goja.FLAG_FALSE)
	return obj
}

// boundedFunc checks a call of a builtin, then makes it with the
// arguments it returns.
type boundedFunc func(c goja.FunctionCall) (this goja.Value, args []goja.Value)

// wrap replaces obj[name] with a builtin that runs check before the
// original.
func (a *scriptAPI) wrap(obj *goja.Object, name string, length int, check boundedFunc) {
	orig, ok := goja.AssertFunction(obj.Get(name))
	if !ok {
		return
	}
	f := a.nativeFunc(name, length, func(c goja.FunctionCall) goja.Value {
		this, args := check(c)
		v, err := orig(this, args...)
		if err != nil {
			panic(err) // the script's exception, or an interrupt
		}
		return v
	})
	_ = obj.DefineDataProperty(name, f, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE)
}

// wrapIterator bounds values() and [Symbol.iterator]() together, since
// spreading an iterable is a loop in Go: [...Array(2**32 - 1)] would fill
// memory without a JavaScript step in between.
func (a *scriptAPI) wrapIterator(proto *goja.Object, what string, length func(goja.Value) int64) {
	orig, ok := goja.AssertFunction(proto.GetSymbol(goja.SymIterator))
	if !ok {
		return
	}
	f := a.nativeFunc("values", 0, func(c goja.FunctionCall) goja.Value {
		a.checkArray(length(c.This), what)
		v, err := orig(c.This)
		if err != nil {
			panic(err)
		}
		return v
	})
	if _, ok := goja.AssertFunction(proto.Get("values")); ok {
		_ = proto.DefineDataProperty("values", f, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE)
	} else {
		_ = f.DefineDataProperty("name", a.vm.ToValue("[Symbol.iterator]"), goja.FLAG_FALSE, goja.FLAG_TRUE, goja.FLAG_FALSE)
	}
	_ = proto.DefineDataPropertySymbol(goja.SymIterator, f, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE)
}

// refuse throws the RangeError of a result over a bound; uncaught, it
// fails the session with ErrMemoryBudget.
func (a *scriptAPI) refuse(what string, n, bound int64) {
	msg := fmt.Sprintf("%s of %d over the session's bound of %d", what, n, bound)
	obj, err := a.rangeError(nil, a.vm.ToValue(msg))
	if err != nil {
		panic(err)
	}
	a.remember(obj, fmt.Errorf("%w: %s", ErrMemoryBudget, msg))
	panic(obj)
}

func (a *scriptAPI) checkString(n int64, fn string) {
	if n > a.bounds.maxString {
		a.refuse(fn+": invalid string length", n, a.bounds.maxString)
	}
}

func (a *scriptAPI) checkArray(n int64, fn string) {
	if n > a.bounds.maxArray {
		a.refuse(fn+": invalid array length", n, a.bounds.maxArray)
	}
}

// thisString is ToString(RequireObjectCoercible(this)), made once: the
// original builtin then gets the primitive, so a script's toString runs
// once, as without the bound.
func (a *scriptAPI) thisString(c goja.FunctionCall, fn string) goja.Value {
	if goja.IsUndefined(c.This) || goja.IsNull(c.This) {
		panic(a.vm.NewTypeError(fmt.Sprintf("String.prototype.%s called on null or undefined", fn)))
	}
	return a.toString(c.This)
}

// toString is ToString(v) as a string value, keeping UTF-16 text as it
// is.
func (a *scriptAPI) toString(v goja.Value) goja.String {
	if _, ok := v.(*goja.Symbol); ok {
		panic(a.vm.NewTypeError("Cannot convert a Symbol value to a string"))
	}
	v = v.ToString() // an object's toString runs here, once
	if s, ok := v.(goja.String); ok {
		return s
	}
	return a.vm.ToValue(v.String()).(goja.String)
}

func stringLen(v goja.Value) int64 {
	if s, ok := v.(goja.String); ok {
		return int64(s.Length())
	}
	return int64(len(v.String()))
}

// toInteger is ToIntegerOrInfinity.
func toInteger(v goja.Value) float64 {
	f := v.ToFloat()
	if math.IsNaN(f) {
		return 0
	}
	return math.Trunc(f)
}

func (a *scriptAPI) repeat(c goja.FunctionCall) (goja.Value, []goja.Value) {
	s := a.thisString(c, "repeat")
	count := a.vm.ToValue(c.Argument(0).ToFloat())
	if n := toInteger(count); n > 0 && !math.IsInf(n, 1) {
		if l := stringLen(s); l > 0 && n*float64(l) > float64(a.bounds.maxString) {
			a.refuse("String.prototype.repeat: invalid string length", int64(min(n*float64(l), math.MaxInt64/2)), a.bounds.maxString)
		}
	}
	return s, []goja.Value{count}
}

func (a *scriptAPI) pad(c goja.FunctionCall) (goja.Value, []goja.Value) {
	s := a.thisString(c, "padStart/padEnd")
	maxLen := a.vm.ToValue(c.Argument(0).ToFloat())
	if n := toInteger(maxLen); n > float64(stringLen(s)) {
		a.checkString(int64(min(n, math.MaxInt64/2)), "String.prototype.padStart/padEnd")
	}
	return s, []goja.Value{maxLen, c.Argument(1)}
}

// split bounds the pieces: exactly for a string separator, by the
// string's length for a pattern.
func (a *scriptAPI) split(c goja.FunctionCall) (goja.Value, []goja.Value) {
	sep := c.Argument(0)
	if goja.IsUndefined(sep) || goja.IsNull(sep) {
		return c.This, c.Arguments
	}
	if _, isObj := sep.(*goja.Object); isObj {
		// A RegExp (or anything with a splitter): at most one piece
		// per code unit, and one more.
		if s, ok := c.This.(goja.String); ok {
			a.checkArray(int64(s.Length())+1, "String.prototype.split")
		}
		return c.This, c.Arguments
	}
	s := a.thisString(c, "split")
	sepStr := a.toString(sep).String() // a Symbol throws here, as in split
	var pieces int64
	if sepStr == "" {
		pieces = stringLen(s)
	} else {
		pieces = int64(strings.Count(s.String(), sepStr)) + 1
	}
	if lim := c.Argument(1); !goja.IsUndefined(lim) {
		pieces = min(pieces, int64(uint32(lim.ToInteger())))
	}
	a.checkArray(pieces, "String.prototype.split")
	return s, []goja.Value{a.vm.ToValue(sepStr), c.Argument(1)}
}

func (a *scriptAPI) stringLength(this goja.Value) int64 {
	if goja.IsUndefined(this) || goja.IsNull(this) {
		return 0 // the original throws its TypeError
	}
	return stringLen(a.toString(this))
}

// arrayLength is LengthOfArrayLike(this), 0 for what has none.
func (a *scriptAPI) arrayLength(this goja.Value) int64 {
	obj, ok := this.(*goja.Object)
	if !ok {
		if s, ok := this.(goja.String); ok {
			return int64(s.Length())
		}
		return 0
	}
	l := obj.Get("length")
	if l == nil {
		return 0
	}
	n := toInteger(l)
	if n <= 0 {
		return 0
	}
	return int64(min(n, 1<<53-1))
}

func (a *scriptAPI) fill(c goja.FunctionCall) (goja.Value, []goja.Value) {
	n := a.arrayLength(c.This)
	rel := func(v goja.Value, dflt int64) int64 {
		if goja.IsUndefined(v) {
			return dflt
		}
		x := toInteger(v)
		if x < 0 {
			return max(0, n+int64(max(x, -1<<53)))
		}
		return min(n, int64(min(x, 1<<53)))
	}
	start, end := rel(c.Argument(1), 0), rel(c.Argument(2), n)
	a.checkArray(end-start, "Array.prototype.fill")
	return c.This, c.Arguments
}

// concat bounds the result's length: the same array passed many times
// is copied each time.
func (a *scriptAPI) concat(c goja.FunctionCall) (goja.Value, []goja.Value) {
	total := a.spreadLength(c.This)
	for _, v := range c.Arguments {
		total += a.spreadLength(v)
		a.checkArray(total, "Array.prototype.concat")
	}
	a.checkArray(total, "Array.prototype.concat")
	return c.This, c.Arguments
}

func (a *scriptAPI) spreadLength(v goja.Value) int64 {
	obj, ok := v.(*goja.Object)
	if !ok {
		return 1
	}
	spreadable := obj.GetSymbol(goja.SymIsConcatSpreadable)
	if spreadable != nil && !goja.IsUndefined(spreadable) {
		if !spreadable.ToBoolean() {
			return 1
		}
		return a.arrayLength(obj)
	}
	if obj.ClassName() == "Array" {
		return a.arrayLength(obj)
	}
	return 1
}

// iterated bounds keys() and entries(), whose iterators a spread drains
// in one Go loop.
func (a *scriptAPI) iterated(c goja.FunctionCall) (goja.Value, []goja.Value) {
	a.checkArray(a.arrayLength(c.This), "Array iterator")
	return c.This, c.Arguments
}

// from bounds an array-like source; an iterable one is bounded by its
// iterator (or is a generator, which the meter can interrupt).
func (a *scriptAPI) from(c goja.FunctionCall) (goja.Value, []goja.Value) {
	if obj, ok := c.Argument(0).(*goja.Object); ok {
		if it := obj.GetSymbol(goja.SymIterator); it == nil || goja.IsUndefined(it) || goja.IsNull(it) {
			a.checkArray(a.arrayLength(obj), "Array.from")
		}
	}
	return c.This, c.Arguments
}

// argList bounds the array-like argument list of apply and construct,
// which the engine copies into a Go slice in one call.
func (a *scriptAPI) argList(i int) boundedFunc {
	return func(c goja.FunctionCall) (goja.Value, []goja.Value) {
		if obj, ok := c.Argument(i).(*goja.Object); ok {
			a.checkArray(a.arrayLength(obj), "argument list")
		}
		return c.This, c.Arguments
	}
}

// join is Array.prototype.join with the result bounded as it grows: its
// elements may be one large string many times over. An array that
// contains itself joins as "" there, as goja's own join does.
func (a *scriptAPI) join(c goja.FunctionCall) goja.Value {
	obj := c.This.ToObject(a.vm)
	for _, o := range a.joining {
		if o == obj {
			return a.vm.ToValue("")
		}
	}
	a.joining = append(a.joining, obj)
	defer func() { a.joining = a.joining[:len(a.joining)-1] }()
	n := a.arrayLength(obj)
	var sep goja.String = a.comma
	if s := c.Argument(0); !goja.IsUndefined(s) {
		sep = a.toString(s)
	}
	if n == 0 {
		return a.vm.ToValue("")
	}
	a.checkArray(n, "Array.prototype.join")
	total := (n - 1) * int64(sep.Length())
	a.checkString(total, "Array.prototype.join")
	var sb goja.StringBuilder
	for i := int64(0); i < n; i++ {
		if i > 0 {
			sb.WriteString(sep)
		}
		el := obj.Get(strconv.FormatInt(i, 10))
		if el == nil || goja.IsUndefined(el) || goja.IsNull(el) {
			continue
		}
		s := a.toString(el)
		total += int64(s.Length())
		a.checkString(total, "Array.prototype.join")
		sb.WriteString(s)
	}
	return sb.String()
}
