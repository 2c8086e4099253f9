package host

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/internal/testwait"

	"github.com/splashfabric/splashfabric/internal/tooltest"
)

var (
	schedSeeds = flag.Int("sched.seeds", 0, "random seeds of TestSchedulerModel beside its fixed ones")
	schedSeed  = flag.Uint64("sched.seed", 0, "replay one seed of TestSchedulerModel")
)

// schedScripts are what the model's runtimes run: short, awaiting, and
// CPU-bound ones of several shapes; ctl.check is a local tool whose
// handler would see two slices of script at once.
var schedScripts = []string{
	`tool.call("ctl.check", ""); return 1`,
	`const out = await tool.start("text.remote", "x"); tool.call("ctl.check", ""); return out`,
	`let n = 0; for (let i = 0; i < 3000; i++) { if (i % 100 == 0) tool.call("ctl.check", ""); n += i } return n`,
	`function f(d) { if (d == 0) { tool.call("ctl.check", ""); return 1 } return f(d - 1) + f(d - 1) } return f(9)`,
	`let n = 0; for (let i = 0; i < 200; i++) { await null; tool.call("ctl.check", ""); n++ } return n`,
	`for (let j = 0; j < 3; j++) { let s = 0; for (let i = 0; i < 20000; i++) s += i; await tool.start("text.remote", "y") } return 3`,
}

// TestSchedulerModel runs generated mixes of runtimes through the
// scheduler at once: tenants, owners that wait (each on its goroutine)
// and owners with Turns (one goroutine for all, as the host loop is),
// short, awaiting and CPU-bound scripts, aborts at random moments, and a
// quantum short enough that slices pause often. It checks that no two
// slices ever run at once, that every script ends (completed, or failed
// with its abort), and that the scheduler holds nothing afterwards: no
// gate, no ticket, no realm. -sched.seed replays a seed.
func TestSchedulerModel(t *testing.T) {
	old := sharedSched.quantum
	sharedSched.quantum = 200 * time.Microsecond
	t.Cleanup(func() { sharedSched.quantum = old })
	for _, seed := range testwait.Seeds([]uint64{1, 2, 3, 4, 5, 6}, *schedSeeds, *schedSeed) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runSchedModel(t, seed) })
	}
}

func runSchedModel(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, seed))
	var inside atomic.Int32
	overlap := atomic.Bool{}
	check := func(string) (string, error) {
		if inside.Add(1) > 1 {
			overlap.Store(true)
		}
		// A little time inside, so that an overlap can show.
		for i := 0; i < 1000 && !overlap.Load(); i++ {
			if inside.Load() > 1 {
				overlap.Store(true)
			}
		}
		inside.Add(-1)
		return "ok", nil
	}
	errAbort := errors.New("aborted by the model")
	newRT := func() *Runtime {
		r := NewRuntime(Config{Owner: []string{"a", "b", "c"}[rng.IntN(3)], ExecutionBudget: time.Minute})
		must(t, r.RegisterTool(tooltest.Text(t, "text.remote")))
		must(t, r.RegisterLocalTool(NewToolPolicy("ctl.check"), check))
		return r
	}
	// Owners that wait: a goroutine each, completing their own calls.
	var wg sync.WaitGroup
	waiters := rng.IntN(5) + 1
	failures := make(chan error, 64)
	for range waiters {
		r, src := newRT(), schedScripts[rng.IntN(len(schedScripts))]
		wg.Go(func() {
			defer r.ReleaseScript()
			res, err := r.Eval(src)
			for err == nil && res.Suspended {
				inv, ok := r.ClaimNextExternalTool()
				if !ok {
					err = fmt.Errorf("suspended with nothing to claim: %+v", res)
					break
				}
				res, err = r.CompleteExternalTool(inv.ID, Ok("done"))
			}
			if err == nil && res.Err != nil {
				err = res.Err
			}
			if err != nil {
				failures <- fmt.Errorf("a waiting owner's script: %w", err)
			}
		})
	}
	// Owners with Turns: one goroutine drives them all.
	turns := NewTurns()
	defer turns.Close()
	type driven struct {
		r       *Runtime
		res     *EvalResult
		aborted bool
	}
	var rts []*driven
	for i := range rng.IntN(6) + 1 {
		r := newRT()
		r.SetTurns(turns, i)
		res, err := r.Eval(schedScripts[rng.IntN(len(schedScripts))])
		must(t, err)
		rts = append(rts, &driven{r: r, res: res})
	}
	deadline := time.After(testwait.DefaultTimeout)
	for {
		done := true
		for _, d := range rts {
			if d.res == nil || d.res.Suspended {
				done = false
			}
		}
		if done {
			break
		}
		// Advance whoever can be: awaiting scripts get their result;
		// now and then one is aborted wherever it stands.
		for _, d := range rts {
			switch {
			case d.res == nil || !d.res.Suspended:
			case rng.IntN(20) == 0:
				d.res, d.aborted = d.r.AbortScript(errAbort), true
			case !d.res.Running:
				inv, ok := d.r.ClaimNextExternalTool()
				if !ok {
					t.Fatalf("seed %d: suspended with nothing to claim", seed)
				}
				res, err := d.r.CompleteExternalTool(inv.ID, Ok("done"))
				must(t, err)
				if res != nil {
					d.res = res
				}
			}
		}
		select {
		case <-turns.Ready():
			for _, tag := range turns.Take() {
				d := rts[tag.(int)]
				if res := d.r.Continue(); res != nil {
					d.res = res
				}
			}
		case <-deadline:
			t.Fatalf("seed %d: the owner with Turns waited too long", seed)
		default:
		}
	}
	wg.Wait()
	close(failures)
	for err := range failures {
		t.Errorf("seed %d: %v", seed, err)
	}
	for _, d := range rts {
		switch {
		case d.aborted && !errors.Is(d.res.Err, errAbort) && d.res.Err != nil:
			t.Errorf("seed %d: an aborted script ended with %v", seed, d.res.Err)
		case !d.aborted && d.res.Err != nil:
			t.Errorf("seed %d: a script failed: %v", seed, d.res.Err)
		}
		d.r.ReleaseScript()
	}
	if overlap.Load() {
		t.Fatalf("seed %d: two slices of script ran at once", seed)
	}
	s := sharedSched
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.holder != nil || s.waiting != 0 || s.blocked != 0 || len(s.urgent) != 0 {
		t.Fatalf("seed %d: the scheduler holds a gate or tickets: holder %v, waiting %d, blocked %d", seed, s.holder != nil, s.waiting, s.blocked)
	}
	for key, list := range s.realms {
		for _, rl := range list {
			if rl.holder != nil || len(rl.waiters) > 0 {
				t.Fatalf("seed %d: realm %q still held", seed, key)
			}
		}
	}
}
