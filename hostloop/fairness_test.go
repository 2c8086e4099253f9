package hostloop

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/internal/testwait"

	"github.com/splashfabric/splashfabric/internal/tooltest"

	"github.com/splashfabric/splashfabric/toolspec"
)

// burnSwitch is a local tool CPU-bound test scripts call on every turn:
// it counts the calls and tells them when to stop.
type burnSwitch struct {
	calls   atomic.Int64
	stopped atomic.Bool
	text    *toolspec.Tool // text.remote
}

func (b *burnSwitch) register(rt *host.Runtime) error {
	if err := rt.RegisterTool(b.text); err != nil {
		return err
	}
	return rt.RegisterLocalTool(host.NewToolPolicy("ctl.stop"), func(string) (string, error) {
		b.calls.Add(1)
		return fmt.Sprint(b.stopped.Load()), nil
	})
}

// TestLoopRunsBesideBusyScripts: with four CPU-bound scripts running,
// whether they burn in their first step (on their submitters) or after an
// await (on the loop), a trivial script completes, one that awaits a tool
// completes, and the loop answers, all while the four still run.
func TestLoopRunsBesideBusyScripts(t *testing.T) {
	// Between its checks a burner spins, so it spends its turns on CPU,
	// not on its tool call budget, however fast the machine.
	const burn = `while (tool.call("ctl.stop", "") !== "true") { for (let i = 0; i < 20000; i++) {} }`
	for _, where := range []string{"first step", "after an await"} {
		t.Run(where, func(t *testing.T) {
			tr := newChanTransport()
			sw := &burnSwitch{text: tooltest.Text(t, "text.remote")}
			l := startTestLoop(t, tr, sw.register)
			ctx := context.Background()
			var wg sync.WaitGroup
			ids := make(chan SessionID, 4)
			for range 4 {
				src := burn
				if where == "after an await" {
					src = `await tool.start("text.remote", "go"); ` + burn
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					s, err := l.Submit(ctx, Submission{Source: src, ExecutionBudget: time.Minute, ToolCallBudget: DefaultMaxSessionToolCallBudget})
					if err != nil {
						t.Error(err)
						return
					}
					ids <- s.ID
				}()
			}
			if where == "after an await" {
				for range 4 {
					tr.Succeed(next(t, tr), "go")
				}
			}
			testwait.Until(t, 0, "the four scripts to burn", func() bool { return sw.calls.Load() > 400 })

			s, err := l.Submit(ctx, Submission{Source: `return 1`})
			if err != nil || s.State != SessionCompleted || s.Value != "1" {
				t.Fatalf("trivial script: %+v, %v", s, err)
			}
			s, err = l.Submit(ctx, Submission{Source: `const out = await tool.start("text.remote", "x"); "got " + out`})
			if err != nil {
				t.Fatal(err)
			}
			for {
				inv := next(t, tr)
				if inv.Input.Text == "x" {
					tr.Succeed(inv, "y")
					break
				}
			}
			if got := waitState(t, l, s.ID, SessionCompleted); got.Value != "got y" {
				t.Fatalf("awaiting script: %+v", got)
			}
			if where == "after an await" {
				close(ids)
				for id := range ids {
					if st, _, err := l.Status(ctx, id); err != nil || st.State != SessionSuspended {
						t.Fatalf("burner %s: %+v, %v; want it still running", id, st, err)
					}
				}
			}
			sw.stopped.Store(true)
			wg.Wait()
		})
	}
}

// TestLoopStopsRunningScripts: a loop stopped while slices run ends them
// and returns; nothing is left waiting for the engine.
func TestLoopStopsRunningScripts(t *testing.T) {
	tr := newChanTransport()
	sw := &burnSwitch{text: tooltest.Text(t, "text.remote")}
	l, err := StartLoop(LoopConfig{Transport: tr, HostID: "h1", Catalog: sw.register})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := l.Submit(context.Background(), Submission{
			Source: `await tool.start("text.remote", "go"); while (true) {}`, ExecutionBudget: time.Minute,
		}); err != nil {
			t.Fatal(err)
		}
		tr.Succeed(next(t, tr), "go")
	}
	// Both burn on the loop now (or wait for their turn).
	l.Stop()
	r := host.NewRuntime(host.Config{})
	if res, err := r.Eval(`return 1`); err != nil || res.Value != "1" {
		t.Fatalf("the engine after the stop: %+v, %v", res, err)
	}
}
