package host

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"
)

// TestSessionsOfARealmCannotReachEachOther runs an intruding session up to
// its await, a second session beside it, then the intruder to its end and
// a third session after it (the realm reused): neither later session sees
// anything the intruder did, and the intruder keeps its own view.
func TestSessionsOfARealmCannotReachEachOther(t *testing.T) {
	tests := []struct {
		name string
		// intrude runs before the intruder's await, own after it (its
		// value is what the intruder still sees); probe runs in the
		// other sessions.
		intrude, own, wantOwn, probe, wantProbe string
	}{
		{"a global", `globalThis.secret = 1; globalThis.other = {n: 2}`, `secret + other.n`, "3",
			`[typeof secret, typeof other, "secret" in globalThis, Object.keys(globalThis).join()].join()`, "undefined,undefined,false,tool,assert"},
		{"a builtin replaced", `JSON = 5; Math = {max: () => 0}`, `JSON + Math.max(1, 2)`, "5",
			`[typeof JSON.parse, Math.max(1, 2)].join()`, "function,2"},
		{"a builtin deleted", `delete globalThis.Math; delete globalThis.Promise`, `typeof Math + typeof Promise`, "undefinedundefined",
			`typeof Math + typeof Promise`, "objectfunction"},
		{"a prototype extended", `let v = []; for (const p of [Array.prototype, Object.prototype, Function.prototype, String.prototype, Promise.prototype]) { try { p.leak = 1 } catch (e) { v.push(e.name) } } globalThis.v = v.join()`, `globalThis.v`, "TypeError,TypeError,TypeError,TypeError,TypeError",
			`[[].leak, ({}).leak, (() => 1).leak, "".leak, Promise.resolve().leak].join()`, ",,,,"},
		{"a method replaced", `let v = []; try { Array.prototype.map = () => "forged" } catch (e) { v.push(e.name) } try { Object.defineProperty(Promise.prototype, "then", {value: () => 0}) } catch (e) { v.push(e.name) } try { JSON.stringify = () => "forged" } catch (e) { v.push(e.name) } globalThis.v = v.join()`, `globalThis.v`, "TypeError,TypeError,TypeError",
			`[[1].map(x => x + 1), JSON.stringify([1])].join()`, "2,[1]"},
		{"a prototype swapped", `let v = []; try { Object.setPrototypeOf(Array.prototype, null) } catch (e) { v.push(e.name) } try { Object.setPrototypeOf(globalThis, null) } catch (e) { v.push(e.name) } globalThis.v = v.join()`, `globalThis.v`, "TypeError,TypeError",
			`[[1, 2].toString(), Object.getPrototypeOf(globalThis) === Object.prototype].join()`, "1,2,true"},
		{"the capabilities", `let v = []; try { tool.extra = 1 } catch (e) { v.push(e.name) } try { tool.start = null } catch (e) { v.push(e.name) } try { assert.x = 1 } catch (e) { v.push(e.name) } globalThis.v = v.join()`, `globalThis.v`, "TypeError,TypeError,TypeError",
			`[typeof tool.extra, typeof tool.start, typeof assert.x].join()`, "undefined,function,undefined"},
		{"an inherited property shadowed", `const e = new Error("x"); e.name = "Mine"; const o = {}; o.toString = () => "own"; globalThis.v = e.name + " " + String(o)`, `v`, "Mine own",
			`new Error("y").name + " " + String({})`, "Error [object Object]"},
		{"the symbol registry", `globalThis.s = Symbol.for("key")`, `String(Symbol.keyFor(s)) + (Symbol.for("key") === s)`, "keytrue",
			`String(Symbol.keyFor(Symbol("key"))) + String(Symbol.keyFor(Symbol.for("other")))`, "undefinedother"},
		{"eval", `globalThis.v = typeof eval`, `v`, "undefined", `typeof eval + typeof globalThis.eval`, "undefinedundefined"},
		{"a function constructor", `globalThis.f = Function("return this")`, `f() === globalThis`, "true",
			`typeof Function("return this")().f`, "undefined"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			intruder := scriptRuntime(t, Config{})
			wantScriptSuspended(t, evalScript(t, intruder, tt.intrude+`; const out = await tool.start("text.remote", "x"); `+tt.own))
			if res := runToEnd(t, scriptRuntime(t, Config{}), tt.probe); res.Err != nil || res.Value != tt.wantProbe {
				t.Fatalf("beside the intruder: %+v, want %q", res, tt.wantProbe)
			}
			inv := claimForScript(t, intruder)
			wantScriptCompleted(t, completeForScript(t, intruder, inv.ID, Ok("done")), tt.wantOwn)
			if res := runToEnd(t, scriptRuntime(t, Config{}), tt.probe); res.Err != nil || res.Value != tt.wantProbe {
				t.Fatalf("after the intruder: %+v, want %q", res, tt.wantProbe)
			}
		})
	}
}

// TestInterruptedTryLeavesTheRealmUsable: an interrupt that unwinds
// through a try block of the script body leaves frames in goja's vm; the
// realm is repaired at the end of the slice, so a session suspended
// beside the interrupted one, and sessions after it, resume as ever.
func TestInterruptedTryLeavesTheRealmUsable(t *testing.T) {
	if !vmLayoutKnown {
		t.Fatal("goja's vm layout is not the one resetVM knows: an interrupted session would break the sessions suspended beside it")
	}
	waiting := scriptRuntime(t, Config{})
	wantScriptSuspended(t, evalScript(t, waiting, `const a = await tool.start("text.remote", "x"); "waited " + a`))
	looping := scriptRuntime(t, Config{ExecutionBudget: 20 * time.Millisecond})
	wantScriptFailed(t, evalScript(t, looping, `try { for (;;) {} } catch (e) {}`), "execution budget")
	inv := claimForScript(t, waiting)
	wantScriptCompleted(t, completeForScript(t, waiting, inv.ID, Ok("done")), "waited done")
	after := scriptRuntime(t, Config{})
	wantScriptCompleted(t, runToEnd(t, after, `const b = await tool.start("text.remote", "y"); "after " + b`), "after ok")
}

var realmSeeds = flag.Int("realm.seeds", 20, "seeds TestRealmInterleavingModel runs")
var realmSeed = flag.Uint64("realm.seed", 0, "run TestRealmInterleavingModel with this seed only")

// TestRealmInterleavingModel drives many sessions of one realm through
// generated interleavings: sessions start, write their own globals, await
// tools in turn, fail by throwing, by running over their budget inside a
// try block, or by touching a builtin, while others are suspended. Each
// session checks, in every slice it resumes in, that its globals and its
// symbols hold exactly what it wrote, and every step that ends a session
// checks its outcome against the model's. A failure names its seed; -realm.seed replays
// it.
func TestRealmInterleavingModel(t *testing.T) {
	seeds := make([]uint64, 0, *realmSeeds)
	if *realmSeed != 0 {
		seeds = append(seeds, *realmSeed)
	} else {
		for i := range *realmSeeds {
			seeds = append(seeds, uint64(i+1))
		}
	}
	steps := 0
	for _, seed := range seeds {
		steps += runRealmModel(t, seed)
		if t.Failed() {
			t.Fatalf("failed with -realm.seed=%d", seed)
		}
	}
	t.Logf("%d seeds, %d steps", len(seeds), steps)
}

// modelSession is one session of the model and what it should see.
type modelSession struct {
	rt      *Runtime
	name    string
	rounds  int // awaits left
	ending  string
	written int // the value of its global counter
}

// realmModelScript awaits rounds times, bumping its own global each time
// and checking that nothing else changed it, then ends as ending says.
func realmModelScript(name string, rounds int, ending string) string {
	end := map[string]string{
		"value":   `"` + name + `:" + globalThis.count`,
		"throw":   `throw new Error("` + name + ` gave up")`,
		"budget":  `try { for (;;) {} } catch (e) {} "unreachable"`,
		"builtin": `let r; try { Array.prototype.push = null; r = "unreachable" } catch (e) { r = "` + name + `:" + e.name } r`,
	}[ending]
	return fmt.Sprintf(`
		globalThis.count = 0; globalThis.owner = %q; let mine = Symbol.for(%q);
		for (let i = 0; i < %d; i++) {
			await tool.start("text.remote", owner);
			if (globalThis.owner !== %q || globalThis.count !== i || Symbol.keyFor(mine) !== %q || typeof Math.max !== "function") {
				throw new Error("isolation broken in %s at " + i + ": " + globalThis.owner + " " + globalThis.count);
			}
			globalThis.count = i + 1;
		}
		%s`, name, name, rounds, name, name, name, end)
}

func runRealmModel(t *testing.T, seed uint64) int {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	var live []*modelSession
	steps, started := 0, 0
	check := func(s *modelSession, res *EvalResult) {
		t.Helper()
		if res.Suspended {
			return
		}
		switch s.ending {
		case "value":
			if want := s.name + ":" + strconv.Itoa(s.written); res.Err != nil || res.Value != want {
				t.Fatalf("seed %d: %s ended %+v, want %q", seed, s.name, res, want)
			}
		case "builtin":
			if want := s.name + ":TypeError"; res.Err != nil || res.Value != want {
				t.Fatalf("seed %d: %s ended %+v, want %q", seed, s.name, res, want)
			}
		case "throw":
			wantScriptFailed(t, res, s.name+" gave up")
		case "budget":
			wantScriptFailed(t, res, "execution budget")
		}
	}
	for started < 24 || len(live) > 0 {
		steps++
		if started < 24 && (len(live) == 0 || rng.IntN(3) == 0) {
			started++
			s := &modelSession{name: "s" + strconv.Itoa(started), rounds: rng.IntN(4)}
			s.ending = []string{"value", "value", "throw", "budget", "builtin"}[rng.IntN(5)]
			cfg := Config{}
			if s.ending == "budget" {
				cfg.ExecutionBudget = 20 * time.Millisecond
			}
			s.rt = scriptRuntime(t, cfg)
			res := evalScript(t, s.rt, realmModelScript(s.name, s.rounds, s.ending))
			if res.Suspended {
				live = append(live, s)
				continue
			}
			s.written = s.rounds
			check(s, res)
			continue
		}
		i := rng.IntN(len(live))
		s := live[i]
		inv := claimForScript(t, s.rt)
		res := completeForScript(t, s.rt, inv.ID, Ok("ok"))
		s.written++
		if !res.Suspended {
			live = append(live[:i], live[i+1:]...)
		}
		check(s, res)
	}
	return steps
}
