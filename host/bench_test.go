package host

import (
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/toolspec"
)

func benchRuntime(b *testing.B, deadline time.Duration) *Runtime {
	b.Helper()
	r, _ := newTestRuntime(b, Config{AuditLimit: 1 << 10})
	register(b, r, toolspec.Spec{Name: "text.remote", Deadline: toolspec.Duration(deadline)})
	return r
}

// BenchmarkGoAPILifecycle is one external operation through the Go API:
// Start, claim, complete.
func BenchmarkGoAPILifecycle(b *testing.B) {
	r := benchRuntime(b, time.Minute)
	b.ReportAllocs()
	for b.Loop() {
		p, err := r.Start("text.remote", "release")
		if err != nil {
			b.Fatal(err)
		}
		inv, _ := r.ClaimNextExternalTool()
		if _, err := r.CompleteExternalTool(inv.ID, Ok("done")); err != nil {
			b.Fatal(err)
		}
		if s, _ := p.Settled(); s.Output != "done" {
			b.Fatal(s)
		}
	}
}

// BenchmarkClaimCompleteWithPending keeps n operations pending (all with
// deadlines, so the heap holds n entries) while one more is started,
// claimed and completed per iteration: the cost must not grow with n.
// benchDeadline gives every pending operation a heap entry.
var benchDeadline = time.Hour

func BenchmarkClaimCompleteWithPending(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(strconv.Itoa(n/1000)+"k", func(b *testing.B) {
			r := benchRuntime(b, benchDeadline)
			for range n {
				if _, err := r.Start("text.remote", "pending"); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := r.Start("text.remote", "x"); err != nil {
					b.Fatal(err)
				}
				inv, ok := r.ClaimNextExternalTool()
				if !ok {
					b.Fatal("nothing to claim")
				}
				if _, err := r.CompleteExternalTool(inv.ID, Ok("done")); err != nil {
					b.Fatal(err)
				}
			}
			if r.Pending() != n {
				b.Fatalf("pending %d", r.Pending())
			}
		})
	}
}

// BenchmarkPendingOperationMemory reports the heap bytes held by one
// pending (started, deadline-bearing) operation and its promise, after the
// audit log is drained.
func BenchmarkPendingOperationMemory(b *testing.B) {
	const n = 100_000
	var perOp float64
	for b.Loop() {
		r := benchRuntime(b, time.Hour)
		keep := make([]*Promise, 0, n)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for range n {
			p, err := r.Start("text.remote", "release")
			if err != nil {
				b.Fatal(err)
			}
			keep = append(keep, p)
		}
		r.DrainAudit()
		runtime.GC()
		runtime.ReadMemStats(&after)
		perOp = float64(after.HeapAlloc-before.HeapAlloc) / n
		runtime.KeepAlive(keep)
		runtime.KeepAlive(r)
	}
	b.ReportMetric(perOp, "B/pending-op")
}

// BenchmarkToolGrants is BenchmarkGoAPILifecycle under tool patterns: the
// check a session with patterns pays on every start, against none (every
// tool), the baseline of the same run.
func BenchmarkToolGrants(b *testing.B) {
	for _, bc := range []struct {
		name  string
		tools []string
	}{
		{"every tool", nil},
		{"one exact", []string{"text.remote"}},
		{"fourth of four", []string{"demo.*", "json.>", "a.b.c", "text.*"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			r, _ := newTestRuntime(b, Config{AuditLimit: 1 << 10, Tools: bc.tools})
			register(b, r, toolspec.Spec{Name: "text.remote", Deadline: toolspec.Duration(time.Minute)})
			b.ReportAllocs()
			for b.Loop() {
				if _, err := r.Start("text.remote", "release"); err != nil {
					b.Fatal(err)
				}
				inv, _ := r.ClaimNextExternalTool()
				if _, err := r.CompleteExternalTool(inv.ID, Ok("done")); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
