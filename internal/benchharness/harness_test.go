package benchharness_test

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"

	"github.com/splashfabric/splashfabric/internal/benchharness"
)

// echoTripper completes every operation from its own goroutine, twice, so
// the harness's duplicate and cross-goroutine handling is exercised
// without a server.
type echoTripper struct {
	ids      chan uint64
	wg       sync.WaitGroup
	complete func(uint64)
}

func newEcho(_ *testing.B, _ int, complete func(uint64)) benchharness.RoundTripper {
	e := &echoTripper{ids: make(chan uint64, 1024), complete: complete}
	e.wg.Go(func() {
		for id := range e.ids {
			e.complete(id)
			e.complete(id)
		}
	})
	return e
}

func (e *echoTripper) Submit(id uint64) error { e.ids <- id; return nil }

func (e *echoTripper) Close() { close(e.ids); e.wg.Wait() }

func metricNames(opts ...benchharness.Option) []string {
	res := testing.Benchmark(func(b *testing.B) { benchharness.InFlight(b, 64, 1, newEcho, opts...) })
	return slices.Sorted(maps.Keys(res.Extra))
}

func TestInFlightMetrics(t *testing.T) {
	cases := []struct {
		name string
		opts []benchharness.Option
		want []string
	}{
		{"default", nil, []string{"ops/s", "p50_µs", "p99_µs"}},
		{"submitters", []benchharness.Option{benchharness.Submitters(4)}, []string{"ops/s", "p50_µs", "p99_µs"}},
		{"cpu", []benchharness.Option{benchharness.Submitters(4), benchharness.ReportCPU()},
			[]string{"cores", "cpu_µs/op", "ops/s", "p50_µs", "p99_µs"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := metricNames(tc.opts...); !slices.Equal(got, tc.want) {
				t.Errorf("metrics %v, want %v", got, tc.want)
			}
		})
	}
}

func ExampleInFlight() {
	res := testing.Benchmark(func(b *testing.B) {
		benchharness.InFlight(b, 64, 1, newEcho, benchharness.ReportCPU())
	})
	fmt.Println(slices.Sorted(maps.Keys(res.Extra)))
	// Output: [cores cpu_µs/op ops/s p50_µs p99_µs]
}
