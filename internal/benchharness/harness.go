package benchharness

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// RoundTripper runs operations for the harness: Submit starts operation id
// and the runner calls the complete function it was built with, from any
// goroutine, when that operation's answer reached the host.
type RoundTripper interface {
	Submit(id uint64) error
	Close()
}

// NewRunner builds a RoundTripper with workers workers that reports each
// finished operation to complete. Completions for unknown or repeated ids
// are ignored, so a runner may report at-least-once.
type NewRunner func(b *testing.B, workers int, complete func(id uint64)) RoundTripper

// completionTimeout bounds one cell so a lost operation fails the run
// instead of hanging it.
const completionTimeout = 2 * time.Minute

// InFlight runs b.N operations through the runner mk builds, keeping at
// most inFlight outstanding, and reports ops/s and the p50/p99 of submit →
// completion.
//
// Every submitter takes a slot before it starts an operation, so the
// number outstanding never exceeds inFlight whatever the submitter count.
func InFlight(b *testing.B, inFlight, workers int, mk NewRunner, opts ...Option) {
	cfg := newConfig(opts)
	if inFlight < 1 || cfg.submitters < 1 {
		b.Fatalf("benchharness: inFlight %d, submitters %d: want at least 1 each", inFlight, cfg.submitters)
	}
	n := b.N
	lat := newLatencies(n)
	slots := make(chan struct{}, inFlight)
	var finished atomic.Int64
	allDone := make(chan struct{})
	var failed sync.Once
	quit := make(chan struct{}) // ends the submitters early on failure
	fail := func() { failed.Do(func() { close(quit) }) }
	var seen sync.Map
	warm := warmupOps(n)
	warmed := make(chan struct{}, warm)
	complete := func(id uint64) {
		if id >= uint64(n) {
			if id < uint64(n+warm) {
				if _, dup := seen.LoadOrStore(id, struct{}{}); !dup {
					warmed <- struct{}{}
				}
			}
			return
		}
		if _, dup := seen.LoadOrStore(id, struct{}{}); dup {
			return
		}
		lat.finish(int(id))
		<-slots
		if finished.Add(1) == int64(n) {
			close(allDone)
		}
	}
	r := mk(b, workers, complete)
	defer r.Close()
	warmUp(b, r, n, warm, min(inFlight, 64), warmed)
	b.ResetTimer()
	msgs0 := readMessages(r)
	cpu0 := processCPU()
	begin := time.Now()
	var next atomic.Int64
	var submitErr atomic.Pointer[error]
	var submitting sync.WaitGroup
	defer submitting.Wait()
	defer fail()
	for range min(inFlight, cfg.submitters) {
		submitting.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(n) || submitErr.Load() != nil {
					return
				}
				select {
				case slots <- struct{}{}:
				case <-quit:
					return
				}
				lat.start(int(i))
				if err := r.Submit(uint64(i)); err != nil {
					submitErr.CompareAndSwap(nil, &err)
					fail()
					return
				}
			}
		})
	}
	select {
	case <-allDone:
	case <-quit:
	case <-time.After(completionTimeout):
		b.Fatalf("%d of %d operations finished", finished.Load(), n)
	}
	elapsed := time.Since(begin)
	cpu := processCPU() - cpu0
	msgs := readMessages(r).since(msgs0)
	b.StopTimer()
	if err := submitErr.Load(); err != nil {
		b.Fatal(*err)
	}
	report(b, cfg, n, elapsed, cpu, lat)
	msgs.report(b, n)
}

// messageCount is a reading of a runner's server counters; ok is false
// for a runner that has none.
type messageCount struct {
	in, out int64
	ok      bool
}

func readMessages(r RoundTripper) messageCount {
	mc, ok := r.(messageCounter)
	if !ok {
		return messageCount{}
	}
	in, out := mc.serverMessages()
	return messageCount{in: in, out: out, ok: true}
}

func (c messageCount) since(before messageCount) messageCount {
	return messageCount{in: c.in - before.in, out: c.out - before.out, ok: c.ok && before.ok}
}

// report adds msgs_in/op and msgs_out/op. Pull heartbeats and the
// operations still in flight when the clock stopped make the figures
// approximate, well within a tenth of a message per operation at any
// useful b.N.
func (c messageCount) report(b *testing.B, n int) {
	if !c.ok || n == 0 {
		return
	}
	b.ReportMetric(float64(c.in)/float64(n), "msgs_in/op")
	b.ReportMetric(float64(c.out)/float64(n), "msgs_out/op")
}

// warmupOps is how many operations run before the measured ones: the
// first operations of a process pay for growing its heap and faulting in
// memory, which would otherwise land on whichever runner happens to go
// first.
func warmupOps(n int) int { return min(n/10, 500) }

// warmUp runs ops operations with ids n, n+1, … in batches of batch and
// waits for each batch, so the measured run starts warm and with nothing
// outstanding.
func warmUp(b *testing.B, r RoundTripper, n, ops, batch int, warmed <-chan struct{}) {
	timeout := time.After(completionTimeout)
	for start := 0; start < ops; start += batch {
		end := min(start+batch, ops)
		for i := start; i < end; i++ {
			if err := r.Submit(uint64(n + i)); err != nil {
				b.Fatalf("warm-up: %v", err)
			}
		}
		for range end - start {
			select {
			case <-warmed:
			case <-timeout:
				b.Fatalf("warm-up: operations did not finish")
			}
		}
	}
}

// Matrix runs mk as one sub-benchmark per cell of the grid every benchmark
// shares, named "inflight=N/workers=M": one operation at a time shows
// latency, 64 and 512 show whether the path keeps many moving, and one or
// four workers show whether it scales out.
func Matrix(b *testing.B, mk NewRunner, opts ...Option) {
	for _, inFlight := range []int{1, 64, 512} {
		for _, workers := range []int{1, 4} {
			b.Run(fmt.Sprintf("inflight=%d/workers=%d", inFlight, workers), func(b *testing.B) {
				InFlight(b, inFlight, workers, mk, opts...)
			})
		}
	}
}
