package metrics

import (
	"context"
	"math"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Series keeps the last minutes of a host's per-tool series, sampled from
// its own collectors (Host), so the console can draw them without a
// Prometheus: calls and retries and failures per second, p50 and p99
// operation latency, and the operations queued and in flight.
//
// Run samples every Interval on a goroutine of its own; Snapshot may be
// called from any goroutine.
type Series struct {
	cfg SeriesConfig

	// mu guards everything below.
	mu   sync.Mutex
	last map[string]toolSample // the previous sample of each tool
	// lastAt is when the previous sample was taken: a tool first seen
	// after it started from zero since then (its series are made at its
	// first call).
	lastAt time.Time
	tools  map[string]*ring
	// window holds each tool's bucket increments of the last
	// LatencyWindow, for the quantiles.
	window map[string][][]float64
}

// SeriesConfig sizes a Series.
type SeriesConfig struct {
	// Gatherer is the registry the Host collectors are registered in.
	Gatherer prometheus.Gatherer
	// Interval is the time between samples; zero picks 2s.
	Interval time.Duration
	// Keep is how many samples each tool keeps; zero picks 150 (five
	// minutes at 2s).
	Keep int
	// LatencyWindow is how many samples' durations the quantiles are
	// taken over, so one quiet interval does not blank them; zero picks 5.
	LatencyWindow int
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// SeriesPoint is one sample of one tool. Rates are per second over the
// interval before At; P50 and P99 are seconds over the latency window,
// NaN when no operation finished in it.
type SeriesPoint struct {
	At       time.Time
	Calls    float64
	Retries  float64
	Failures float64
	P50, P99 float64
	Queued   float64
	InFlight float64
}

// ToolSeries is one tool's points, oldest first.
type ToolSeries struct {
	Tool   string
	Points []SeriesPoint
}

// NewSeries returns a Series; nothing is sampled until Run.
func NewSeries(cfg SeriesConfig) *Series {
	if cfg.Interval <= 0 {
		cfg.Interval = 2 * time.Second
	}
	if cfg.Keep <= 0 {
		cfg.Keep = 150
	}
	if cfg.LatencyWindow <= 0 {
		cfg.LatencyWindow = 5
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Series{cfg: cfg, last: make(map[string]toolSample), tools: make(map[string]*ring), window: make(map[string][][]float64)}
}

// Interval is the time between samples.
func (s *Series) Interval() time.Duration { return s.cfg.Interval }

// Run samples until ctx ends.
func (s *Series) Run(ctx context.Context) {
	t := time.NewTicker(s.cfg.Interval)
	defer t.Stop()
	for {
		s.Sample()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Snapshot returns every tool's series, tools by name.
func (s *Series) Snapshot() []ToolSeries {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]ToolSeries, 0, len(s.tools))
	for tool, r := range s.tools {
		out = append(out, ToolSeries{Tool: tool, Points: r.points()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Tool < out[j].Tool })
	return out
}

// toolSample is what one gather read of one tool: cumulative counters,
// the duration histogram's cumulative buckets, and the gauges.
type toolSample struct {
	at                       time.Time
	started, retries, failed float64
	buckets                  []float64 // cumulative counts, by bound
	bounds                   []float64
	pending, claimed         float64
}

// Sample reads the collectors once and appends a point to every tool's
// series. A gather that fails appends nothing.
func (s *Series) Sample() {
	families, err := s.cfg.Gatherer.Gather()
	if err != nil && len(families) == 0 {
		return
	}
	now := s.cfg.Now()
	cur := make(map[string]*toolSample)
	get := func(m *dto.Metric) *toolSample {
		tool := label(m, "tool")
		ts := cur[tool]
		if ts == nil {
			ts = &toolSample{at: now}
			cur[tool] = ts
		}
		return ts
	}
	for _, f := range families {
		switch f.GetName() {
		case "splash_operations_started_total":
			for _, m := range f.GetMetric() {
				get(m).started += m.GetCounter().GetValue()
			}
		case "splash_retries_total":
			for _, m := range f.GetMetric() {
				get(m).retries += m.GetCounter().GetValue()
			}
		case "splash_operations_finished_total":
			for _, m := range f.GetMetric() {
				switch label(m, "outcome") {
				case OutcomeFailed, OutcomeTimedOut, OutcomeIndeterminate:
					get(m).failed += m.GetCounter().GetValue()
				}
			}
		case "splash_operation_duration_seconds":
			for _, m := range f.GetMetric() {
				ts := get(m)
				h := m.GetHistogram()
				for _, b := range h.GetBucket() {
					ts.bounds = append(ts.bounds, b.GetUpperBound())
					ts.buckets = append(ts.buckets, float64(b.GetCumulativeCount()))
				}
				ts.bounds = append(ts.bounds, math.Inf(1))
				ts.buckets = append(ts.buckets, float64(h.GetSampleCount()))
			}
		case "splash_operations_pending":
			for _, m := range f.GetMetric() {
				get(m).pending = m.GetGauge().GetValue()
			}
		case "splash_operations_claimed":
			for _, m := range f.GetMetric() {
				get(m).claimed = m.GetGauge().GetValue()
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	prevAt := s.lastAt
	s.lastAt = now
	for tool, ts := range cur {
		prev, seen := s.last[tool]
		s.last[tool] = *ts
		switch {
		case seen:
		case prevAt.IsZero():
			continue // rates need two samples
		default:
			prev = toolSample{at: prevAt}
		}
		secs := ts.at.Sub(prev.at).Seconds()
		if secs <= 0 {
			continue
		}
		rate := func(now, before float64) float64 { return max(now-before, 0) / secs }
		p := SeriesPoint{
			At: ts.at, Calls: rate(ts.started, prev.started), Retries: rate(ts.retries, prev.retries),
			Failures: rate(ts.failed, prev.failed), Queued: ts.pending, InFlight: ts.claimed,
		}
		win := append(s.window[tool], bucketDelta(ts.buckets, prev.buckets))
		if len(win) > s.cfg.LatencyWindow {
			win = win[len(win)-s.cfg.LatencyWindow:]
		}
		s.window[tool] = win
		sum := make([]float64, len(ts.bounds))
		for _, d := range win {
			for i := range min(len(d), len(sum)) {
				sum[i] += d[i]
			}
		}
		p.P50, p.P99 = quantile(0.5, ts.bounds, sum), quantile(0.99, ts.bounds, sum)
		r := s.tools[tool]
		if r == nil {
			r = &ring{buf: make([]SeriesPoint, 0, s.cfg.Keep)}
			s.tools[tool] = r
		}
		r.add(p)
	}
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// bucketDelta is the increase of each cumulative bucket since before.
func bucketDelta(now, before []float64) []float64 {
	d := make([]float64, len(now))
	for i := range now {
		if i < len(before) {
			d[i] = max(now[i]-before[i], 0)
		} else {
			d[i] = now[i]
		}
	}
	return d
}

// quantile estimates the q-quantile of cumulative bucket counts as
// Prometheus's histogram_quantile does: linear within the bucket that holds
// it, the highest finite bound for the +Inf bucket. NaN without counts.
func quantile(q float64, bounds, cumulative []float64) float64 {
	if len(cumulative) == 0 {
		return math.NaN()
	}
	total := cumulative[len(cumulative)-1]
	if total == 0 {
		return math.NaN()
	}
	rank := q * total
	for i, c := range cumulative {
		if c < rank {
			continue
		}
		if math.IsInf(bounds[i], 1) {
			if i == 0 {
				return math.NaN()
			}
			return bounds[i-1]
		}
		lower, below := 0.0, 0.0
		if i > 0 {
			lower, below = bounds[i-1], cumulative[i-1]
		}
		if c == below {
			return bounds[i]
		}
		return lower + (bounds[i]-lower)*(rank-below)/(c-below)
	}
	return bounds[len(bounds)-1]
}

// ring keeps the newest points.
type ring struct {
	buf  []SeriesPoint
	next int
}

func (r *ring) add(p SeriesPoint) {
	if len(r.buf) < cap(r.buf) {
		r.buf = append(r.buf, p)
		return
	}
	r.buf[r.next] = p
	r.next = (r.next + 1) % len(r.buf)
}

func (r *ring) points() []SeriesPoint {
	out := make([]SeriesPoint, 0, len(r.buf))
	out = append(out, r.buf[r.next:]...)
	return append(out, r.buf[:r.next]...)
}
