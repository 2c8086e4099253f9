package itest

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/hostloop"
	"github.com/splashfabric/splashfabric/toolspec"
	"github.com/splashfabric/splashfabric/workeragent"
)

// sequentialScript awaits calls of tool one after another and sums the
// echoed indices, so the value proves every call came back with its own
// answer.
func sequentialScript(tool string, calls int) string {
	return fmt.Sprintf(`let sum = 0;
for (let i = 0; i < %d; i++) { sum += Number(await tool.start(%q, String(i))); }
sum`, calls, tool)
}

func sumTo(n int) string { return strconv.Itoa(n * (n - 1) / 2) }

// Scenario 1: three agents share one pool; twenty scripts each await fifty
// calls in sequence. Every script completes and every operation ran
// exactly once.
func TestManyScriptsManyWorkersRunEveryCallOnce(t *testing.T) {
	const scripts, calls = 20, 50
	c := newCluster(t, options{tools: []toolspec.Spec{tool("it.count")}})
	fx := newEffects()
	h := counting(fx, echo)
	var workers []*worker
	for i := range 3 {
		workers = append(workers, c.startWorker(fmt.Sprintf("w%d", i+1), func(a *workeragent.Agent) {
			must(t, a.HandleTool(c.tool("it.count"), h))
		}))
	}
	ids := make([]hostloop.SessionID, scripts)
	for i := range ids {
		ids[i] = c.submit(sequentialScript("it.count", calls))
	}
	for _, id := range ids {
		wantCompleted(t, c.wait(id, 60*time.Second), sumTo(calls))
	}
	keys := fx.keys()
	if len(keys) != scripts*calls || fx.count() != scripts*calls {
		t.Fatalf("%d keys, %d runs; want %d of each", len(keys), fx.count(), scripts*calls)
	}
	for k, n := range keys {
		if n != 1 {
			t.Errorf("key %q ran %d times", k, n)
		}
	}
	var executed uint64
	for _, w := range workers {
		s := w.Stats()
		executed += s.Executed
		if s.Forged != 0 || s.TakenOver != 0 || s.Indeterminate != 0 {
			t.Errorf("%s stats = %+v", w.id, s)
		}
	}
	if executed != scripts*calls {
		t.Errorf("workers executed %d, want %d", executed, scripts*calls)
	}
}
