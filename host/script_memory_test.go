package host

import (
	"errors"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/internal/tooltest"
	"github.com/splashfabric/splashfabric/toolspec"
)

// attackBudget is the session budget the memory attacks run against, and
// attackHostLimit the soft limit of the test process while they run, so a
// regression costs the test machine a slow collection, not its memory.
const (
	// garbageChildEnv marks the process TestGarbageIsNotCharged runs in.
	garbageChildEnv = "HOST_GARBAGE_TEST_CHILD"
	attackBudget    = 64 << 20
	attackHostLimit = 1 << 30
)

func capHostMemory(t *testing.T) {
	old := debug.SetMemoryLimit(attackHostLimit)
	t.Cleanup(func() { debug.SetMemoryLimit(old) })
}

// runToEnd evaluates source and completes every operation it starts with
// "ok" until the script ends.
func runToEnd(t *testing.T, r *Runtime, source string) *EvalResult {
	t.Helper()
	res := evalScript(t, r, source)
	for res.Suspended {
		inv := claimForScript(t, r)
		var err error
		if res, err = r.CompleteExternalTool(inv.ID, Ok("ok")); err != nil {
			t.Fatal(err)
		}
	}
	return res
}

// TestMemoryAttacksAreStopped runs each attack while another session is
// suspended and a third runs slices on another goroutine: the attack
// fails with ErrMemoryBudget, the others complete, and the test process
// lives. The log gives the heap each attack reached.
func TestMemoryAttacksAreStopped(t *testing.T) {
	capHostMemory(t)
	tests := []struct{ name, source string }{
		{"issue reproduction: big repeat refused", `let a=[]; while(true) a.push("x".repeat(2**28) + a.length)`},
		{"repeat 2**29 refused", `"x".repeat(2**29)`},
		{"megabyte pieces kept", `const s = "x".repeat(2**20); let a=[]; while(true) a.push(s + a.length)`},
		{"doubling concatenation", `let s = "x".repeat(2**20); while(true) s = s + s`},
		{"array of numbers", `let a=[]; while(true) a.push(a.length)`},
		{"object graph", `let a=[]; while(true) a.push({n: a.length, s: "k" + a.length})`},
		{"growth across awaits", `const s = "x".repeat(2**22); let a=[]; while(true) { a.push(s + a.length); await tool.start("text.remote", "") }`},
		{"padStart", `"x".padStart(2**30)`},
		{"padEnd", `"x".padEnd(2**30, "ab")`},
		{"fill", `Array(2**30).fill(0)`},
		{"join of one string many times", `Array(2**20).fill("x".repeat(2**20)).join("")`},
		{"join separator", `Array(2**20).join("x".repeat(2**10))`},
		{"array toString", `String(Array(2**20).fill("x".repeat(2**20)))`},
		{"spread of a long array", `[...Array(2**31)]`},
		{"spread into a call", `String.fromCharCode(...Array(2**31))`},
		{"apply of an array-like", `String.fromCharCode.apply(null, {length: 2**31})`},
		{"Reflect.apply", `Reflect.apply(Math.max, null, {length: 2**31})`},
		{"Array.from array-like", `Array.from({length: 2**31})`},
		{"keys spread", `[...Array(2**31).keys()]`},
		{"split into characters", `"x".repeat(2**24).split("")`},
		{"string spread", `[..."x".repeat(2**24)]`},
		{"concat of one array many times", `let b = Array(2**16).fill(0); [].concat(...Array(2**10).fill(b))`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			waiting := scriptRuntime(t, Config{})
			if res := evalScript(t, waiting, `const r = await tool.start("text.remote", "w"); "waited " + r`); !res.Suspended {
				t.Fatalf("waiting session: %+v", res)
			}
			// A busy neighbour runs slices while the attack runs, as a
			// submission's first slice runs beside the loop's.
			stop, busyErr := make(chan struct{}), make(chan error, 1)
			remote := tooltest.Text(t, "text.remote")
			go func() { busyErr <- busySession(remote, stop) }()

			r := scriptRuntime(t, Config{MemoryBudget: attackBudget, ExecutionBudget: time.Minute})
			base := settledHeap()
			began := time.Now()
			res := runToEnd(t, r, tt.source)
			elapsed := time.Since(began)
			peak := sharedMeter.peakHeap()
			close(stop)

			if !errors.Is(res.Err, ErrMemoryBudget) {
				t.Fatalf("attack ended with %+v, want ErrMemoryBudget", res)
			}
			t.Logf("stopped after %v, heap %+d MiB at its peak: %v", elapsed.Round(time.Millisecond), (peak-base)>>20, res.Err)
			if err := <-busyErr; err != nil {
				t.Fatalf("busy neighbour: %v", err)
			}
			inv := claimForScript(t, waiting)
			if res, err := waiting.CompleteExternalTool(inv.ID, Ok("ok")); err != nil || res.Value != "waited ok" {
				t.Fatalf("waiting session: %+v, %v", res, err)
			}
			// The failed session is usable again, with a fresh budget.
			if res := runToEnd(t, r, `"again"`); res.Value != "again" {
				t.Fatalf("after the attack: %+v", res)
			}
		})
	}
}

// settledHeap collects garbage, starts a new peak measurement and returns
// the heap it starts from.
func settledHeap() int64 {
	runtime.GC()
	sharedMeter.peakHeap()
	return sharedMeter.peakHeap()
}

// busySession runs short slices of an ordinary script until stop closes.
func busySession(remote *toolspec.Tool, stop <-chan struct{}) error {
	// Its execution budget is generous: the test is about memory, and an
	// attack slows a loaded machine down.
	r := NewRuntime(Config{MemoryBudget: attackBudget, ExecutionBudget: time.Minute})
	if err := r.RegisterTool(remote); err != nil {
		return err
	}
	res, err := r.Eval(`let n = 0; while (true) { const out = await tool.start("text.remote", "x"); n += JSON.parse(out).length; if (out == "[]") return n }`)
	for err == nil && res.Suspended {
		inv, _ := r.ClaimNextExternalTool()
		out := `[1,2,3]`
		select {
		case <-stop:
			out = `[]`
		default:
		}
		res, err = r.CompleteExternalTool(inv.ID, Ok(out))
	}
	if err == nil && res.Err != nil {
		err = res.Err
	}
	return err
}

// TestGarbageIsNotCharged: a script that allocates far more than its
// budget but keeps little of it completes. The meter reads the heap of
// the whole process, so the test runs in a process of its own: what an
// earlier test of this binary left running or held (it failed so under
// a CPU hog, charged with 65 MiB the script never had) is not the
// script's.
func TestGarbageIsNotCharged(t *testing.T) {
	if os.Getenv(garbageChildEnv) == "" {
		exe, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(exe, "-test.run", "^TestGarbageIsNotCharged$", "-test.count", "1", "-test.v")
		cmd.Env = append(os.Environ(), garbageChildEnv+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestGarbageIsNotCharged") {
			t.Fatalf("in a process of its own: %v\n%s", err, out)
		}
		return
	}
	capHostMemory(t)
	r := scriptRuntime(t, Config{MemoryBudget: attackBudget, ExecutionBudget: time.Minute})
	src := `let n = 0; const base = "x".repeat(2**20)
	for (let i = 0; i < 64; i++) {
		for (let j = 0; j < 16; j++) { let s = base + i + j; n += s.length }
		await tool.start("text.remote", "")
	}
	let kept = []; for (let i = 0; i < 8; i++) kept.push(base + i)
	n + kept.length`
	res := runToEnd(t, r, src)
	if res.Err != nil {
		t.Fatalf("a script making 1 GiB of garbage failed: %v", res.Err)
	}
	if n, err := strconv.Atoi(res.Value); err != nil || n < 64*16<<20 {
		t.Fatalf("value %q", res.Value)
	}
}

// TestBoundedBuiltinsKeepTheirMeaning: the wrapped builtins still do what
// the language says below their bounds, and a refusal is a RangeError a
// script can catch.
func TestBoundedBuiltinsKeepTheirMeaning(t *testing.T) {
	tests := []struct{ source, want string }{
		{`"ab".repeat(3)`, "ababab"},
		{`"ab".repeat(0) + "|" + "".repeat(2**40)`, "|"},
		{`"5".padStart(3, "0") + "5".padEnd(3) + "|"`, "0055  |"},
		{`"a,b,,c".split(",").length`, "4"},
		{`"a,b,c".split(",", 2).join("+")`, "a+b"},
		{`"abc".split("").join("-")`, "a-b-c"},
		{`"a1b2c".split(/\d/).join()`, "a,b,c"},
		{`[1, [2, 3], null, undefined, "x"].join("-")`, "1-2,3---x"},
		{`const a = [1]; a.push(a, 2); a.join()`, "1,,2"},
		{`String([1, 2]) + [3]`, "1,23"},
		{`Array.prototype.join.call({length: 2, 0: "a", 1: "b"}, "")`, "ab"},
		{`[1, 2, 3].fill(0, 1).join()`, "1,0,0"},
		{`[1, 2, 3].fill(9, -1).join()`, "1,2,9"},
		{`[1].concat([2], 3, [[4]]).length`, "4"},
		{`[...[1, 2], ..."hé"].join()`, "1,2,h,é"},
		{`[...[7, 8].keys()].join() + [...[7, 8].entries()].join()`, "0,10,7,1,8"},
		{`Array.from({length: 3}, (_, i) => i).join()`, "0,1,2"},
		{`Array.from("ab").join()`, "a,b"},
		{`Math.max.apply(null, [1, 5, 2]) + Reflect.apply(Math.min, null, [4, 3])`, "8"},
		{`Reflect.construct(Date, [0]).getTime()`, "0"},
		{`Array.prototype[Symbol.iterator] === Array.prototype.values`, "true"},
		{`let v; try { "x".repeat(2**40) } catch (e) { v = (e instanceof RangeError) + " " + e.message }; v`,
			"true String.prototype.repeat: invalid string length of 1099511627776 over the session's bound of 67108864"},
		{`let v; try { "x".repeat(-1) } catch (e) { v = e.name }; v`, "RangeError"},
		{`let v; try { String.prototype.repeat.call(null, 2) } catch (e) { v = e.name }; v`, "TypeError"},
		{`let v; try { "a".split(Symbol()) } catch (e) { v = e.name }; v`, "TypeError"},
		{`let v; try { [Symbol()].join() } catch (e) { v = e.name }; v`, "TypeError"},
		{`let v; try { String.prototype.padEnd.call(undefined, 3) } catch (e) { v = e.name }; v`, "TypeError"},
		{`"1a1".split(1).join("|") + [..."ab"].length + [...new Set([1, 1, 2])].length`, "|a|22"},
	}
	for _, tt := range tests {
		t.Run(tt.source, func(t *testing.T) {
			res := runToEnd(t, scriptRuntime(t, Config{}), tt.source)
			if res.Err != nil || res.Value != tt.want {
				t.Fatalf("got %+v, want %q", res, tt.want)
			}
		})
	}
}

// TestHostInternalsHidden: nothing a script can read names the engine or
// the Go code behind its builtins.
func TestHostInternalsHidden(t *testing.T) {
	tests := []struct{ source, want string }{
		{`typeof GoError`, "undefined"},
		{`typeof ArrayBuffer + typeof Uint8Array + typeof DataView`, "undefinedundefinedundefined"},
		{`const g = Object.getPrototypeOf(globalThis); [typeof g.Uint8Array, "GoError" in globalThis, Object.getOwnPropertyNames(g).includes("ArrayBuffer")].join()`, "undefined,false,false"},
		{`[typeof JSON.parse, typeof Math.max, typeof Reflect.ownKeys, globalThis.Array === [].constructor].join()`, "function,function,function,true"},
		{`[Object.getOwnPropertyDescriptor(globalThis, "Reflect").value.apply === Reflect.apply, Reflect.apply.name, Object.getOwnPropertyDescriptor(globalThis, "Uint8Array")].join()`, "true,apply,"},
		{`let v = []; try { Object.defineProperty(globalThis, "leak", {get() { return this }}) } catch (e) { v.push(e.name) }; globalThis.x = 7; Object.defineProperty(globalThis, "y", {value: 8}); v.push(x + y); v.push(typeof Object.getOwnPropertyDescriptor(globalThis, "JSON").value); v.join()`, "TypeError,15,object"},
		{`let leaked; Object = {getOwnPropertyDescriptor(t) { leaked = t }}; const d = Reflect.getOwnPropertyDescriptor(globalThis, "JSON"); (leaked === undefined) + " " + typeof d.value`, "true object"},
		{`let v; try { Object.defineProperty(Object.prototype, "me", {get() { return this }, configurable: true}) } catch (e) { v = e.name }; [v, typeof globalThis.me, globalThis.hasOwnProperty("tool"), String(globalThis), Object.getPrototypeOf(globalThis) === Object.prototype].join()`, "TypeError,undefined,true,[object global],true"},
		{`let v; try { Object.setPrototypeOf(globalThis, {get me() { return this }}) } catch (e) { v = e.name }; v + typeof globalThis.me`, "TypeErrorundefined"},
		{`let v; try { notDefinedAnywhere } catch (e) { v = e.name }; v`, "ReferenceError"},
		{`JSON = 5; Error = 6; delete globalThis.Math; [JSON, Error, typeof Math, Object.keys(globalThis)].join()`, "5,6,undefined,tool,assert"},
		{`let v = []; try { globalThis.tool = 1 } catch (e) { v.push(e.name) }; try { Object.defineProperty(globalThis, "assert", {value: 1}) } catch (e) { v.push(e.name) }; v.push(typeof tool.start); v.join()`, "TypeError,TypeError,function"},
		{`tool.start.toString()`, "function start() { [native code] }"},
		{`tool.start_json.name + tool.call.name + tool.call_json.name + tool.start.length`, "start_jsoncallcall_json2"},
		{`String(assert)`, "function assert() { [native code] }"},
		{`"".repeat.toString() + [].join.name + [][Symbol.iterator].name`, "function repeat() { [native code] }joinvalues"},
		{`let v; try { tool.start(Symbol("s")) } catch (e) { v = e.message }; v`, "tool.start: name must be a string, got symbol"},
		{`let v; try { tool.start(1n) } catch (e) { v = e.message }; v`, "tool.start: name must be a string, got bigint"},
		{`let v; try { await tool.start_json("text.remote", {toJSON() { throw new Error("no") }}) } catch (e) { v = e.stack }; v`, "at "},
	}
	for _, tt := range tests {
		t.Run(tt.source, func(t *testing.T) {
			res := runToEnd(t, scriptRuntime(t, Config{}), tt.source)
			if res.Err != nil {
				t.Fatalf("got %+v", res)
			}
			for _, leak := range []string{"goja", "github.com", ".go", "func1", "-fm"} {
				if strings.Contains(res.Value, leak) {
					t.Fatalf("script sees %q in %q", leak, res.Value)
				}
			}
			if tt.want == "at " {
				if !strings.Contains(res.Value, tt.want) {
					t.Fatalf("got %q, want a stack", res.Value)
				}
				return
			}
			if res.Value != tt.want {
				t.Fatalf("got %q, want %q", res.Value, tt.want)
			}
		})
	}
}

// TestUnawaitedStartsAreBounded is the reproduction of 100,000 tool.start
// calls never awaited: the pending limit refuses them early, with its
// code, and the audit kept between drains stays within its bound.
func TestUnawaitedStartsAreBounded(t *testing.T) {
	r := scriptRuntime(t, Config{MaxPending: 10_000, ToolCallBudget: 1_000_000, AuditLimit: 1024})
	base := settledHeap()
	res := runToEnd(t, r, `for (let i = 0; i < 100000; i++) tool.start("text.remote", "x")`)
	peak := sharedMeter.peakHeap() - base
	if !errors.Is(res.Err, ErrPendingLimit) {
		t.Fatalf("got %+v, want ErrPendingLimit", res)
	}
	if n := len(r.Audit()); n > 1024 {
		t.Fatalf("audit holds %d events, bound 1024", n)
	}
	if r.AuditDropped() == 0 {
		t.Fatal("no dropped audit events counted")
	}
	t.Logf("heap %+d MiB at its peak, audit dropped %d", peak>>20, r.AuditDropped())
}
