package host

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/dop251/goja"
	"github.com/dop251/goja/parser"
)

// BenchmarkTrivialBesideBurners is the fairness target: with four
// CPU-bound scripts running (each in a slice of its own, as four
// submissions' first steps), how long a trivial script takes from Eval
// to completion. It reports the median, p99 and worst latency in
// milliseconds beside the quantum; the target is under 100 ms plus one
// quantum. "alone" is the same without the burners.
func BenchmarkTrivialBesideBurners(b *testing.B) {
	for _, n := range []int{0, 4} {
		name := "alone"
		if n > 0 {
			name = "beside-4-burners"
		}
		b.Run(name, func(b *testing.B) {
			// The realm is built before the clock runs.
			warm := NewRuntime(Config{Owner: "same"})
			if _, err := warm.Eval(`return 0`); err != nil {
				b.Fatal(err)
			}
			warm.ReleaseScript()
			if n > 0 {
				defer burnersB(b, n)()
			}
			var lat []time.Duration
			for b.Loop() {
				r := NewRuntime(Config{Owner: "same"})
				start := time.Now()
				res, err := r.Eval(`return 1`)
				lat = append(lat, time.Since(start))
				if err != nil || res.Value != "1" {
					b.Fatalf("%+v, %v", res, err)
				}
				r.ReleaseScript()
			}
			reportLatency(b, lat)
			b.ReportMetric(float64(sharedSched.quantum)/float64(time.Millisecond), "quantum-ms")
		})
	}
}

// burnersB starts n CPU-bound scripts, each on a goroutine of its own,
// waits until each runs, and returns what stops them.
func burnersB(b *testing.B, n int) (stop func()) {
	b.Helper()
	stopped := make(chan struct{})
	done := make(chan struct{}, n)
	running := make(chan struct{}, n)
	for range n {
		r := NewRuntime(Config{Owner: "same", ExecutionBudget: time.Hour})
		once := false
		if err := r.RegisterLocalTool(NewToolPolicy("ctl.stop"), func(string) (string, error) {
			if !once {
				once = true
				running <- struct{}{}
			}
			select {
			case <-stopped:
				return "true", nil
			default:
				return "false", nil
			}
		}); err != nil {
			b.Fatal(err)
		}
		go func() {
			_, _ = r.Eval(`while (tool.call("ctl.stop", "") !== "true") {}`)
			r.ReleaseScript()
			done <- struct{}{}
		}()
	}
	for range n {
		<-running
	}
	return func() {
		close(stopped)
		for range n {
			<-done
		}
	}
}

// reportLatency reports the median, p99 and worst of lat in ms.
func reportLatency(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
	b.ReportMetric(ms(lat[len(lat)*99/100]), "p99-ms")
	b.ReportMetric(ms(lat[len(lat)-1]), "max-ms")
}

// BenchmarkYieldPoints is what the yield points cost a CPU-bound script:
// a tight loop, and a recursion of small calls, compiled as scripts are
// and without the yield points, in the same realm.
func BenchmarkYieldPoints(b *testing.B) {
	for _, c := range []struct{ name, src string }{
		{"loop", `(async function () { let s = 0; for (let i = 0; i < 100000; i++) { s += i } return s })()`},
		{"calls", `(async function () { function f(n) { return n < 2 ? n : f(n - 1) + f(n - 2) } return f(18) })()`},
	} {
		for _, yielding := range []bool{false, true} {
			name := c.name + "/plain"
			if yielding {
				name = c.name + "/yielding"
			}
			b.Run(name, func(b *testing.B) {
				rl := newRealm("bench", DefaultGrants)
				var prg *goja.Program
				var err error
				if yielding {
					tree, perr := parser.ParseFile(nil, "bench", c.src, 0)
					if perr != nil {
						b.Fatal(perr)
					}
					prg, err = compileYielding(tree, true)
				} else {
					prg, err = goja.Compile("bench", c.src, true)
				}
				if err != nil {
					b.Fatal(err)
				}
				for b.Loop() {
					v, err := rl.vm.RunProgram(prg)
					if err == nil && yielding {
						start, _ := goja.AssertFunction(v)
						_, err = start(goja.Undefined(), rl.yield)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkResumeWithTurns is one resumption of a suspended script (a
// tool result delivered, the script awaiting the next), as a plain owner
// runs it and as the host loop does (SetTurns: the slice runs on a
// goroutine of its own while the owner waits).
func BenchmarkResumeWithTurns(b *testing.B) {
	for _, turns := range []bool{false, true} {
		name := "waiting-owner"
		if turns {
			name = "turns"
		}
		b.Run(name, func(b *testing.B) {
			r := scriptBenchRuntime(b)
			t := NewTurns()
			defer t.Close()
			if turns {
				r.SetTurns(t, nil)
			}
			src := `for (let i = 0; i < ` + strconv.Itoa(b.N) + `; i++) { await tool.start("text.remote", "x") }`
			if res, err := r.Eval(src); err != nil || !res.Suspended {
				b.Fatalf("Eval: %+v, %v", res, err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				inv, _ := r.ClaimNextExternalTool()
				res, err := r.CompleteExternalTool(inv.ID, Ok("done"))
				if err != nil {
					b.Fatal(err)
				}
				// A slice held up past its quantum (a busy machine)
				// goes on when its turn comes.
				for res != nil && res.Running {
					<-t.Ready()
					t.Take()
					res = r.Continue()
				}
			}
			b.StopTimer()
			r.ReleaseScript()
		})
	}
}
