package benchharness

import (
	"slices"
	"sync/atomic"
	"time"
)

// latencies holds one submit → completion time per operation. Starts are
// written by submitters and read by whichever goroutine completes the
// operation, hence the atomics; each latency slot is written once, by the
// completion that won the duplicate check.
type latencies struct {
	starts []int64
	lat    []int64
}

func newLatencies(n int) *latencies {
	return &latencies{starts: make([]int64, n), lat: make([]int64, n)}
}

func (l *latencies) start(i int) { atomic.StoreInt64(&l.starts[i], time.Now().UnixNano()) }

func (l *latencies) finish(i int) {
	l.lat[i] = time.Now().UnixNano() - atomic.LoadInt64(&l.starts[i])
}

// percentiles sorts the latencies and returns the p50 and p99 in
// microseconds. It is called once every operation finished.
func (l *latencies) percentiles() (p50, p99 float64) {
	n := len(l.lat)
	slices.Sort(l.lat)
	return float64(l.lat[n*50/100]) / 1e3, float64(l.lat[min(n-1, n*99/100)]) / 1e3
}
