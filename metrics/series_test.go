package metrics_test

import (
	"math"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/metrics"
)

// The series are the host's own counters and gauges, sampled: rates over
// each interval, latency quantiles over the window, gauges as they stand.
func TestSeriesSampleTheHostsCollectors(t *testing.T) {
	reg := metrics.NewRegistry()
	h := metrics.NewHost(reg)
	now := time.Unix(1000, 0)
	s := metrics.NewSeries(metrics.SeriesConfig{Gatherer: reg, Interval: 2 * time.Second, Keep: 3, Now: func() time.Time { return now }})

	h.OperationStarted("t") // before the first sample: not a rate yet
	s.Sample()
	if got := s.Snapshot(); len(got) != 0 {
		t.Fatalf("one sample made points: %+v", got)
	}
	for range 4 {
		h.OperationStarted("t")
	}
	h.OperationRetried("t", metrics.RetryTransient)
	h.OperationFinished("t", metrics.OutcomeSucceeded, 20*time.Millisecond)
	h.OperationFinished("t", metrics.OutcomeSucceeded, 40*time.Millisecond)
	h.OperationFinished("t", metrics.OutcomeFailed, 4*time.Second)
	h.SetQueue("t", 7, 2)
	now = now.Add(2 * time.Second)
	s.Sample()

	got := s.Snapshot()
	if len(got) != 1 || got[0].Tool != "t" || len(got[0].Points) != 1 {
		t.Fatalf("snapshot %+v", got)
	}
	p := got[0].Points[0]
	want := metrics.SeriesPoint{At: now, Calls: 2, Retries: 0.5, Failures: 0.5, Queued: 7, InFlight: 2}
	if p.At != want.At || p.Calls != want.Calls || p.Retries != want.Retries || p.Failures != want.Failures || p.Queued != want.Queued || p.InFlight != want.InFlight {
		t.Errorf("point %+v, want %+v", p, want)
	}
	// Three durations: the median in the 25-50ms bucket, the 99th in
	// the 2.5-5s one.
	if p.P50 < 0.025 || p.P50 > 0.05 || p.P99 < 2.5 || p.P99 > 5 {
		t.Errorf("p50 %v, p99 %v", p.P50, p.P99)
	}

	// A tool first called after a sample counts from zero.
	h.OperationStarted("late")
	now = now.Add(2 * time.Second)
	s.Sample()
	for _, ts := range s.Snapshot() {
		if ts.Tool == "late" && (len(ts.Points) != 1 || ts.Points[0].Calls != 0.5) {
			t.Errorf("a tool new since the last sample: %+v", ts.Points)
		}
	}

	// Quiet intervals keep the window's quantiles until it passes, and
	// only Keep points stay.
	for range 6 {
		now = now.Add(2 * time.Second)
		s.Sample()
	}
	pts := s.Snapshot()[0].Points
	if len(pts) != 3 || !pts[2].At.Equal(now) || pts[2].Calls != 0 {
		t.Fatalf("points after quiet intervals: %+v", pts)
	}
	if !math.IsNaN(pts[2].P50) {
		t.Errorf("p50 %v after the window passed, want NaN", pts[2].P50)
	}
}
