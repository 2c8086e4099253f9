package hostloop

import (
	"context"
	"runtime"
	"testing"

	"github.com/splashfabric/splashfabric/workflow"
)

// BenchmarkSuspendedSessionHeap measures the heap one suspended session
// holds: b.N scripts each wait on one call the loop has published, with
// and without a ledger. Run it with as many sessions as a host would hold:
//
//	go test -run '^$' -bench SuspendedSessionHeap -benchtime 10000x ./hostloop/
func BenchmarkSuspendedSessionHeap(b *testing.B) {
	for _, durable := range []bool{false, true} {
		name := "plain"
		if durable {
			name = "durable"
		}
		b.Run(name, func(b *testing.B) {
			tr := NewMemTransport(b.N + 16)
			cfg := LoopConfig{Transport: tr, HostID: "h1", Catalog: remoteCatalog(b),
				Limits: Limits{MaxSuspendedSessions: b.N + 16}}
			if durable {
				cfg.Ledger = workflow.NewMemoryLog()
			}
			l, err := StartLoop(cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer l.Stop()
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			b.ResetTimer()
			for range b.N {
				if _, err := l.Submit(context.Background(), Submission{Source: `await tool.start("text.remote", "x")`}); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			runtime.GC()
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(b.N), "heap_B/session")
		})
	}
}
