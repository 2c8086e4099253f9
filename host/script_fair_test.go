package host

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/internal/testwait"
)

// burners runs n CPU-bound scripts (source, with the local tool ctl.stop
// telling them when to end) each on a goroutine of its own, as
// submissions' first steps are, and returns a function that stops them
// and waits for their results.
func burners(t *testing.T, n int, owner, source string) (stop func() []*EvalResult, done func() int) {
	t.Helper()
	var mu sync.Mutex
	stopped := false
	finished := 0
	results := make([]*EvalResult, n)
	rts := make([]*Runtime, n)
	var wg sync.WaitGroup
	started := make(chan struct{}, n)
	for i := range n {
		r := NewRuntime(Config{Owner: owner, ExecutionBudget: time.Minute})
		rts[i] = r
		must(t, r.RegisterLocalTool(NewToolPolicy("ctl.stop"), func(string) (string, error) {
			mu.Lock()
			defer mu.Unlock()
			select {
			case started <- struct{}{}:
			default:
			}
			return fmt.Sprint(stopped), nil
		}))
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := r.Eval(source)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			results[i] = res
			finished++
			mu.Unlock()
		}()
	}
	for range n {
		select {
		case <-started:
		case <-time.After(testwait.DefaultTimeout):
			t.Fatal("the burners did not start")
		}
	}
	stop = func() []*EvalResult {
		mu.Lock()
		stopped = true
		mu.Unlock()
		wg.Wait()
		releaseAll(rts...)
		return results
	}
	t.Cleanup(func() { stop() })
	done = func() int {
		mu.Lock()
		defer mu.Unlock()
		return finished
	}
	return stop, done
}

// burnSources are CPU-bound scripts that reach the scheduler each in
// another way: loops of every kind, recursion without a loop, callbacks,
// getters, promise jobs.
var burnSources = []struct{ name, src string }{
	{"while", `while (tool.call("ctl.stop", "") !== "true") {}`},
	{"for", `for (;;) { if (tool.call("ctl.stop", "") === "true") break }`},
	{"do-while", `do {} while (tool.call("ctl.stop", "") !== "true")`},
	{"for-of a generator", `function* g() { for (;;) yield tool.call("ctl.stop", "") } for (const s of g()) { if (s === "true") break }`},
	{"recursion", `function f(n) { if (tool.call("ctl.stop", "") === "true") return 0; return n === 0 ? 1 : f(n - 1) + f(n - 1) } f(60)`},
	{"arrow recursion", `const f = n => tool.call("ctl.stop", "") === "true" ? 0 : n === 0 ? 1 : f(n - 1) + f(n - 1); f(60)`},
	{"getters", `let d = 0; const o = { get x() { if (tool.call("ctl.stop", "") === "true" || d > 60) return 0; d++; const v = this.x + this.x; d--; return v } }; o.x`},
	{"callbacks", `let d = 0; const a = [1, 2]; const f = () => { if (tool.call("ctl.stop", "") === "true" || d > 60) return 0; d++; a.map(f); d--; return 1 }; f()`},
	{"Function", `new Function("stop", "while (stop() !== 'true') {}")(() => tool.call("ctl.stop", ""))`},
	{"async function constructor", `const AF = (async function () {}).constructor; await AF("stop", "while (stop() !== 'true') {}")(() => tool.call("ctl.stop", ""))`},
	{"promise jobs", `let n = 0; while (tool.call("ctl.stop", "") !== "true") { await null; n++ }`},
}

// TestTrivialScriptRunsBesideBurners: with four CPU-bound scripts
// running, a trivial one completes while they still run, whichever way
// they burn, and whether they are its own tenant's or another's.
func TestTrivialScriptRunsBesideBurners(t *testing.T) {
	for _, b := range burnSources {
		for _, owner := range []string{"same", "other"} {
			t.Run(b.name+"/"+owner, func(t *testing.T) {
				stop, done := burners(t, 4, "same", b.src)
				r := NewRuntime(Config{Owner: owner})
				defer releaseAll(r)
				res, err := r.Eval(`return 1`)
				if err != nil || !res.Completed() || res.Value != "1" {
					t.Fatalf("trivial script: %+v, %v", res, err)
				}
				if n := done(); n != 0 {
					t.Fatalf("%d burners ended before the trivial script did", n)
				}
				for i, res := range stop() {
					if res == nil || res.Err != nil {
						t.Fatalf("burner %d: %+v", i, res)
					}
				}
			})
		}
	}
}

// TestExecutionBudgetCountsEveryQuantum: a slice cut into quanta still
// ends at its execution budget, counted over all of them.
func TestExecutionBudgetCountsEveryQuantum(t *testing.T) {
	stop, _ := burners(t, 2, "other", `while (tool.call("ctl.stop", "") !== "true") {}`)
	defer stop()
	r := NewRuntime(Config{ExecutionBudget: 100 * time.Millisecond})
	defer releaseAll(r)
	res, err := r.Eval(`while (true) {}`)
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(res.Err, ErrExecutionBudget) {
		t.Fatalf("result %+v, want the execution budget", res)
	}
}

// releaseAll lets go of the runtimes' scripts, and so of the memory the
// meter still counts them for: a test must not leave the next one
// sharing its credit with sessions nobody holds.
func releaseAll(rts ...*Runtime) {
	for _, r := range rts {
		r.ReleaseScript()
	}
}

// owner drives runtimes with Turns as the host loop does: it continues
// each runtime whose turn comes until until reports true.
func drive(t *testing.T, turns *Turns, rts map[any]*Runtime, results map[any]*EvalResult, until func() bool) {
	t.Helper()
	deadline := time.After(testwait.DefaultTimeout)
	for !until() {
		select {
		case <-turns.Ready():
			for _, tag := range turns.Take() {
				results[tag] = rts[tag].Continue()
			}
		case <-deadline:
			t.Fatalf("timed out; results so far %+v", results)
		}
	}
}

// TestTurnsKeepTheOwnerFree: a runtime with Turns returns to its owner
// after a quantum; a trivial script started meanwhile completes on its
// turn while the burner is still running, and aborting the burner
// unwinds it.
func TestTurnsKeepTheOwnerFree(t *testing.T) {
	turns := NewTurns()
	defer turns.Close()
	burner := NewRuntime(Config{ExecutionBudget: time.Minute})
	burner.SetTurns(turns, "burner")
	res, err := burner.Eval(`while (true) {}`)
	if err != nil || !res.Running {
		t.Fatalf("burner's first quantum: %+v, %v; want running", res, err)
	}
	trivial := NewRuntime(Config{})
	trivial.SetTurns(turns, "trivial")
	defer releaseAll(burner, trivial)
	if res, err = trivial.Eval(`return 1`); err != nil {
		t.Fatal(err)
	}
	results := map[any]*EvalResult{"burner": running, "trivial": res}
	drive(t, turns, map[any]*Runtime{"burner": burner, "trivial": trivial}, results, func() bool { return !results["trivial"].Running })
	if !results["trivial"].Completed() || results["trivial"].Value != "1" || !burner.Running() {
		t.Fatalf("trivial %+v with the burner running %v", results["trivial"], burner.Running())
	}
	stop := errors.New("stopped by its owner")
	if res := burner.AbortScript(stop); res == nil || !errors.Is(res.Err, stop) || burner.Running() {
		t.Fatalf("abort: %+v", res)
	}
	// The gate is free again.
	r := NewRuntime(Config{})
	defer releaseAll(r)
	if res, err := r.Eval(`return 2`); err != nil || res.Value != "2" {
		t.Fatalf("after the abort: %+v, %v", res, err)
	}
}

// TestPausedSliceHoldsItsRealm: a session of the realm a paused slice
// holds waits for the slice to end; a new session of the same tenant runs
// in another realm meanwhile.
func TestPausedSliceHoldsItsRealm(t *testing.T) {
	turns := NewTurns()
	defer turns.Close()
	waiter := scriptRuntime(t, Config{Owner: "realm-test"})
	waiter.SetTurns(turns, "waiter")
	res := evalScript(t, waiter, `const out = await tool.start("text.remote", "x"); "got " + out`)
	wantScriptSuspended(t, res)
	inv := claimForScript(t, waiter)

	burner := NewRuntime(Config{Owner: "realm-test", ExecutionBudget: time.Minute})
	burner.SetTurns(turns, "burner")
	if res, _ = burner.Eval(`while (true) {}`); !res.Running {
		t.Fatalf("burner: %+v", res)
	}
	if burner.script.(*scriptEngine).realm != waiter.script.(*scriptEngine).realm {
		t.Fatal("the burner did not start in the waiter's realm")
	}
	res, err := waiter.CompleteExternalTool(inv.ID, Ok("done"))
	if err != nil || !res.Running {
		t.Fatalf("the waiter's resumption: %+v, %v; want running (its realm is held)", res, err)
	}
	fresh := NewRuntime(Config{Owner: "realm-test"})
	fresh.SetTurns(turns, "fresh")
	defer releaseAll(waiter, burner, fresh)
	res, _ = fresh.Eval(`return 3`)
	results := map[any]*EvalResult{"waiter": running, "burner": running, "fresh": res}
	rts := map[any]*Runtime{"waiter": waiter, "burner": burner, "fresh": fresh}
	drive(t, turns, rts, results, func() bool { return !results["fresh"].Running })
	if results["fresh"].Value != "3" || !results["waiter"].Running {
		t.Fatalf("fresh %+v, waiter %+v: want the fresh one done and the waiter still waiting", results["fresh"], results["waiter"])
	}
	burner.AbortScript(errors.New("stop"))
	drive(t, turns, rts, results, func() bool { return !results["waiter"].Running })
	if results["waiter"].Value != "got done" {
		t.Fatalf("waiter: %+v", results["waiter"])
	}
}

// TestDynamicFunctionsKeepTheirMeaning: the function constructors a
// realm replaces make the functions the language's do.
func TestDynamicFunctionsKeepTheirMeaning(t *testing.T) {
	tests := []struct{ name, src, want string }{
		{"Function", `Function("a", "b", "return a + b")(1, 2)`, "3"},
		{"new Function", `new Function("return 7")()`, "7"},
		{"no arguments", `typeof Function()`, "function"},
		{"constructor identity", `(function () {}).constructor === Function && Function.prototype.constructor === Function`, "true"},
		{"instanceof", `Function("return 1") instanceof Function`, "true"},
		{"sloppy mode", `Function("return this === undefined")()`, "false"},
		{"async", `const AF = (async function () {}).constructor; await AF("x", "return await x")(Promise.resolve(5))`, "5"},
		{"generator", `const GF = (function* () {}).constructor; [...GF("yield 1; yield 2")()].join()`, "1,2"},
		{"name", `Function.name + " " + (async function () {}).constructor.name`, "Function AsyncFunction"},
		{"syntax error", `let r = "compiled"; try { Function("return )") } catch (e) { r = e instanceof SyntaxError } r`, "true"},
		{"no escape from the body", `let r = "compiled"; try { Function("}); (function () {") } catch (e) { r = e instanceof SyntaxError } r`, "true"},
		{"no escape from the parameters", `let r = "compiled"; try { Function("a) {}; (function (", "") } catch (e) { r = e instanceof SyntaxError } r`, "true"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewRuntime(Config{})
			defer releaseAll(r)
			res, err := r.Eval(tt.src)
			if err != nil || !res.Completed() || res.Value != tt.want {
				t.Fatalf("%s: %+v, %v; want %q", tt.src, res, err, tt.want)
			}
		})
	}
}
