package itest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/toolspec"
	"github.com/splashfabric/splashfabric/workeragent"
)

// Scenario 7: a worker dies mid-call (its connection closes without an
// ack). The stream redelivers the same attempt; an idempotent tool runs
// again under the same key and the script gets one result; a
// non-idempotent one is not run again and the outcome is indeterminate.
func TestWorkerCrashMidCall(t *testing.T) {
	tests := []struct {
		name       string
		idempotent bool
		wantRuns   int
		wantValue  string
		// wantIndeterminate: the script's error says the effect is unknown.
		wantIndeterminate bool
	}{
		{name: "idempotent runs again", idempotent: true, wantRuns: 2, wantValue: "ok: x"},
		{name: "non-idempotent is indeterminate", wantRuns: 1, wantValue: "caught: ", wantIndeterminate: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			effect := tool("it.effect")
			effect.Idempotent = tt.idempotent
			c := newCluster(t, options{
				tools:  []toolspec.Spec{effect},
				fabric: func(f *fabric.Config) { f.AckWait = time.Second },
			})
			fx := newEffects()
			hang := make(chan struct{})
			defer close(hang)
			h := counting(fx, func(ctx context.Context, call *workeragent.Call) (workeragent.Output, error) {
				if fx.count() == 1 {
					// The first holder never finishes: the test kills it.
					select {
					case <-hang:
					case <-ctx.Done():
					}
					return workeragent.Output{}, context.Cause(ctx)
				}
				return echo(ctx, call)
			})
			crashed := c.startWorker("w1", func(a *workeragent.Agent) { must(t, a.HandleTool(c.tool("it.effect"), h)) })
			id := c.submit(sprintf(catchScript, "it.effect"))
			testwait.Until(t, 0, "the first run", func() bool { return fx.count() == 1 })
			crashed.nc.Close()
			survivor := c.startWorker("w2", func(a *workeragent.Agent) { must(t, a.HandleTool(c.tool("it.effect"), h)) })
			s := c.wait(id, 15*time.Second)
			wantValuePrefix(t, s, tt.wantValue)
			if tt.wantIndeterminate != strings.Contains(s.Value, "indeterminate") {
				t.Fatalf("script saw %q, want indeterminate = %v", s.Value, tt.wantIndeterminate)
			}
			keys := fx.keys()
			if fx.count() != tt.wantRuns || len(keys) != 1 {
				t.Fatalf("runs = %d over keys %v, want %d under one key", fx.count(), keys, tt.wantRuns)
			}
			st := survivor.Stats()
			if st.Redeliveries < 1 || st.TakenOver != 1 {
				t.Fatalf("survivor stats = %+v", st)
			}
			if tt.wantIndeterminate && st.Indeterminate != 1 {
				t.Fatalf("survivor stats = %+v, want one indeterminate", st)
			}
		})
	}
}
