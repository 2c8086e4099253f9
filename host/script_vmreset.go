package host

import (
	"reflect"
	"unsafe"

	"github.com/dop251/goja"
)

// goja leaves a frame behind when an interrupt unwinds through a try
// block of an async function (every script body is one): after such a
// run its vm still holds one call frame, one try frame and two stack
// slots, so every later entry looks nested to it, and nested entries
// neither run the Promise jobs they queue nor let them go. A vm per
// session never noticed: a session that was interrupted dropped its vm.
// A realm is shared, so it is put back into the state every top-level run
// leaves (no frames, an empty stack, no queued job) at the end of any
// slice that left it otherwise. Between slices no JavaScript is running,
// so nothing can refer to what is cleared.
//
// The fields are goja's own, reached by name; vmLayoutKnown says whether
// the pinned version has them, and where it does not, a realm that needs
// the repair is retired instead (TestInterruptedTryLeavesTheRealmUsable
// shows which of the two happens).

// vmLayout locates the fields resetVM clears.
type vmLayout struct {
	vm                                   int // Runtime.vm, a *vm
	stack, callStack, tryStack, sp, jobs []int
}

var vmLayoutOf, vmLayoutKnown = findVMLayout()

func findVMLayout() (vmLayout, bool) {
	rt, ok := reflect.TypeFor[goja.Runtime]().FieldByName("vm")
	if !ok || rt.Type.Kind() != reflect.Pointer {
		return vmLayout{}, false
	}
	inner := rt.Type.Elem()
	l := vmLayout{vm: rt.Index[0]}
	for _, f := range []struct {
		name string
		kind reflect.Kind
		at   *[]int
	}{
		{"stack", reflect.Slice, &l.stack},
		{"callStack", reflect.Slice, &l.callStack},
		{"tryStack", reflect.Slice, &l.tryStack},
		{"sp", reflect.Int, &l.sp},
	} {
		sf, ok := inner.FieldByName(f.name)
		if !ok || sf.Type.Kind() != f.kind {
			return vmLayout{}, false
		}
		*f.at = sf.Index
	}
	jq, ok := reflect.TypeFor[goja.Runtime]().FieldByName("jobQueue")
	if !ok || jq.Type.Kind() != reflect.Slice {
		return vmLayout{}, false
	}
	l.jobs = jq.Index
	return l, true
}

// settable makes an unexported field writable.
func settable(v reflect.Value) reflect.Value {
	return reflect.NewAt(v.Type(), unsafe.Pointer(v.UnsafeAddr())).Elem()
}

// vmLeftFrames reports whether a top-level run left frames behind; the
// gate is held and no JavaScript runs.
func vmLeftFrames(vm *goja.Runtime) bool {
	if !vmLayoutKnown {
		return false
	}
	inner := reflect.ValueOf(vm).Elem().Field(vmLayoutOf.vm).Elem()
	return inner.FieldByIndex(vmLayoutOf.callStack).Len() > 0 || inner.FieldByIndex(vmLayoutOf.tryStack).Len() > 0
}

// resetVM clears what a top-level run left behind and reports whether it
// could; the gate is held and no JavaScript runs.
func resetVM(vm *goja.Runtime) bool {
	if !vmLayoutKnown {
		return false
	}
	rv := reflect.ValueOf(vm).Elem()
	inner := rv.Field(vmLayoutOf.vm).Elem()
	for _, idx := range [][]int{vmLayoutOf.callStack, vmLayoutOf.tryStack, vmLayoutOf.stack} {
		f := settable(inner.FieldByIndex(idx))
		f.Set(reflect.Zero(f.Type()))
	}
	settable(inner.FieldByIndex(vmLayoutOf.sp)).SetInt(0)
	jobs := settable(rv.FieldByIndex(vmLayoutOf.jobs))
	jobs.Set(reflect.Zero(jobs.Type()))
	return true
}
