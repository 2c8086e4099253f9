package host

import (
	"strconv"
	"testing"

	"github.com/splashfabric/splashfabric/internal/tooltest"
)

// BenchmarkScriptedLifecycle measures one external operation driven by a
// script: tool.start, claim, complete, and the script resuming.
func BenchmarkScriptedLifecycle(b *testing.B) {
	// eval-each: every operation is a whole Eval of the reference's first
	// example, as a host running one short script per request would do.
	b.Run("eval-each", func(b *testing.B) {
		r := scriptBenchRuntime(b)
		b.ReportAllocs()
		for b.Loop() {
			if res, err := r.Eval(specExample1Script); err != nil || !res.Suspended {
				b.Fatalf("Eval: %+v, %v", res, err)
			}
			inv, _ := r.ClaimNextExternalTool()
			if res, err := r.CompleteExternalTool(inv.ID, Ok("done")); err != nil || !res.Completed() {
				b.Fatalf("complete: %+v, %v", res, err)
			}
		}
	})
	// one-script: a single script awaits b.N operations in a loop, so the
	// figure is the cost of one resumption without compiling or entering
	// a new script.
	b.Run("one-script", func(b *testing.B) {
		r := scriptBenchRuntime(b)
		src := `for (let i = 0; i < ` + strconv.Itoa(b.N) + `; i++) {
			let output = await tool.start("text.remote", "release"); assert(output == "done")
		}`
		if res, err := r.Eval(src); err != nil || !res.Suspended {
			b.Fatalf("Eval: %+v, %v", res, err)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			inv, _ := r.ClaimNextExternalTool()
			res, err := r.CompleteExternalTool(inv.ID, Ok("done"))
			if err != nil || res.Suspended == (i == b.N-1) {
				b.Fatalf("complete %d: %+v, %v", i, res, err)
			}
		}
	})
}

func scriptBenchRuntime(b *testing.B) *Runtime {
	b.Helper()
	r := NewRuntime(Config{})
	must(b, r.RegisterTool(tooltest.Text(b, "text.remote")))
	return r
}

// BenchmarkScriptSession is one whole script session per operation, as the
// loop runs a submission: a fresh runtime, registration, Eval of the same
// source every time, claim, completion and the script resuming. Unlike
// BenchmarkScriptedLifecycle it pays for a new vm each time.
func BenchmarkScriptSession(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		r := scriptBenchRuntime(b)
		if res, err := r.Eval(`const r = await tool.start("text.remote", "x"); r`); err != nil || !res.Suspended {
			b.Fatalf("Eval: %+v, %v", res, err)
		}
		inv, _ := r.ClaimNextExternalTool()
		if res, err := r.CompleteExternalTool(inv.ID, Ok("done")); err != nil || !res.Completed() {
			b.Fatalf("complete: %+v, %v", res, err)
		}
	}
}
