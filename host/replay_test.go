package host

import (
	"errors"
	"testing"

	"github.com/splashfabric/splashfabric/toolspec"
)

// replayRuntime is a runtime with text.remote and a local echo, on a
// manual clock at t0, seeded as given.
func replayRuntime(t *testing.T, seed RandomSeed, plan []PlannedCall) (*Runtime, *ManualClock) {
	t.Helper()
	r, clock := newTestRuntime(t, Config{RandomSeed: &seed, Replay: plan})
	register(t, r, toolspec.Spec{Name: "text.remote"})
	must(t, r.RegisterLocalTool(NewToolPolicy("text.echo"), func(in string) (string, error) { return in, nil }))
	return r, clock
}

const timeAndChance = `
let a = [Math.random(), Date.now(), new Date().toISOString()];
let out = await tool.start("text.remote", "go");
a.push(Math.random(), Date.now(), out);
return JSON.stringify(a);
`

// runTimeAndChance runs timeAndChance to the end, answering its one call
// after the clock moved by a second.
func runTimeAndChance(t *testing.T, seed RandomSeed) string {
	t.Helper()
	r, clock := replayRuntime(t, seed, nil)
	wantScriptSuspended(t, evalScript(t, r, timeAndChance))
	inv := claimForScript(t, r)
	clock.Advance(1e9)
	res := completeForScript(t, r, inv.ID, ToolResult{Output: "done"})
	if !res.Completed() {
		t.Fatalf("script did not complete: %+v", res)
	}
	return res.Value
}

func TestTimeAndRandomnessRepeatUnderTheSameSeedAndClock(t *testing.T) {
	seed := RandomSeed{1, 2, 3}
	first, again := runTimeAndChance(t, seed), runTimeAndChance(t, seed)
	if first != again {
		t.Fatalf("same seed and clock gave %s then %s", first, again)
	}
	if other := runTimeAndChance(t, RandomSeed{9}); other == first {
		t.Fatalf("another seed gave the same numbers: %s", other)
	}
}

func TestRandomSeedIsDrawnWhenNotGiven(t *testing.T) {
	a, _ := newTestRuntime(t, Config{})
	b, _ := newTestRuntime(t, Config{})
	if a.RandomSeed() == b.RandomSeed() || a.RandomSeed() == (RandomSeed{}) {
		t.Fatalf("drawn seeds %x and %x", a.RandomSeed(), b.RandomSeed())
	}
}

func TestReplayFollowingItsPlanClaimsTheSameCalls(t *testing.T) {
	plan := []PlannedCall{{CallIndex: 2, Tool: "text.remote", Input: "go"}}
	r, _ := replayRuntime(t, RandomSeed{}, plan)
	wantScriptSuspended(t, evalScript(t, r, `tool.call("text.echo", "x"); return await tool.start("text.remote", "go")`))
	inv := claimForScript(t, r)
	if inv.IdempotencyKey != r.idempotencyKey(2) {
		t.Fatalf("claimed %s, want call 2's key", inv.IdempotencyKey)
	}
	wantScriptCompleted(t, completeForScript(t, r, inv.ID, ToolResult{Output: "ok"}), "ok")
	if err := r.Diverged(); err != nil {
		t.Fatalf("Diverged = %v", err)
	}
}

func TestReplayDivergenceStopsTheScriptAndDispatchesNothing(t *testing.T) {
	plan := []PlannedCall{{CallIndex: 1, Tool: "text.remote", Input: "go"}, {CallIndex: 2, Tool: "text.remote", Input: "then"}}
	tests := []struct {
		name, script string
	}{
		{"other input", `await tool.start("text.remote", "stop")`},
		{"caught and tried again", `try { tool.start("text.remote", "stop") } catch (e) {} ; await tool.start("text.remote", "go")`},
		{"local call where an external one was", `tool.call("text.echo", "go")`},
		{"second call differs", `let p = tool.start("text.remote", "go"); let q = tool.start("text.remote", "else"); await p`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, _ := replayRuntime(t, RandomSeed{}, plan)
			res := evalScript(t, r, tt.script)
			se := wantScriptFailed(t, res, "nondeterministic")
			if !errors.Is(se, ErrNondeterministic) || !errors.Is(r.Diverged(), ErrNondeterministic) {
				t.Fatalf("error %v, Diverged %v; want ErrNondeterministic", se, r.Diverged())
			}
			for {
				inv, ok := r.ClaimNextExternalTool()
				if !ok {
					break
				}
				if inv.Input != "go" || inv.IdempotencyKey != r.idempotencyKey(1) {
					t.Fatalf("a diverged replay dispatched %+v", inv)
				}
			}
			if _, err := r.Start("text.remote", "go"); !errors.Is(err, ErrNondeterministic) {
				t.Fatalf("a start after divergence: %v", err)
			}
		})
	}
}
