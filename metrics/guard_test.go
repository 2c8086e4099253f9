package metrics_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/splashfabric/splashfabric/metrics"
)

func TestLabelValuesStayBounded(t *testing.T) {
	tests := []struct {
		name   string
		opts   []metrics.Option
		record func(h *metrics.Host)
		series string // the one series of splash_operations_finished_total expected at 1
	}{
		{"known tool and outcome", nil,
			func(h *metrics.Host) { h.OperationFinished("echo", metrics.OutcomeSucceeded, 0) },
			`{outcome="succeeded",tool="echo"}`},
		{"unknown outcome", nil,
			func(h *metrics.Host) { h.OperationFinished("echo", "exploded", 0) },
			`{outcome="other",tool="echo"}`},
		{"malformed tool name", nil,
			func(h *metrics.Host) { h.OperationFinished("op-7f3a/../x", metrics.OutcomeFailed, 0) },
			`{outcome="failed",tool="other"}`},
		{"empty tool name", nil,
			func(h *metrics.Host) { h.OperationFinished("", metrics.OutcomeFailed, 0) },
			`{outcome="failed",tool="other"}`},
		{"over-long tool name", nil,
			func(h *metrics.Host) { h.OperationFinished(strings.Repeat("a", 129), metrics.OutcomeFailed, 0) },
			`{outcome="failed",tool="other"}`},
		{"tool outside the allow list", []metrics.Option{metrics.WithTools("echo")},
			func(h *metrics.Host) { h.OperationFinished("upper", metrics.OutcomeFailed, 0) },
			`{outcome="failed",tool="other"}`},
		{"tool beyond the limit", []metrics.Option{metrics.WithMaxTools(1)},
			func(h *metrics.Host) {
				h.OperationStarted("echo")
				h.OperationFinished("upper", metrics.OutcomeFailed, 0)
			},
			`{outcome="failed",tool="other"}`},
		{"dotted tool name", nil,
			func(h *metrics.Host) { h.OperationFinished("text.remote", metrics.OutcomeTimedOut, 0) },
			`{outcome="timed_out",tool="text.remote"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := metrics.NewHost(nil, tt.opts...)
			tt.record(h)
			got := nonZeroSeries(t, h, "splash_operations_finished_total")
			if len(got) != 1 || got[0] != tt.series {
				t.Errorf("non-zero series = %v, want [%s]", got, tt.series)
			}
		})
	}
}

func TestEnumeratedLabelsFoldUnknownValues(t *testing.T) {
	h := metrics.NewHost(nil)
	w := metrics.NewWorker(nil)
	h.OperationRetried("echo", "whenever")
	h.CancellationAnswered("echo", "maybe")
	h.AuthFailure("session-1234")
	h.FrameRejected("frame-99")
	h.SessionStarted()
	h.SessionFinished("exploded")
	w.HandlerStarted("echo")
	w.HandlerDone("echo", "exploded", time.Millisecond)
	w.AuthFailure("req-42")
	w.Reconciled("echo", "lost")

	for _, tc := range []struct {
		c      prometheus.Collector
		metric string
		want   string
	}{
		{h, "splash_retries_total", `{class="other",tool="echo"}`},
		{h, "splash_cancellations_total", `{disposition="other",tool="echo"}`},
		{h, "splash_auth_failures_total", `{reason="other"}`},
		{h, "splash_frames_rejected_total", `{reason="other"}`},
		{h, "splash_sessions_total", `{state="other"}`},
		{w, "splash_worker_invocations_total", `{outcome="other",tool="echo"}`},
		{w, "splash_worker_auth_failures_total", `{reason="other"}`},
		{w, "splash_worker_reconciliations_total", `{status="other",tool="echo"}`},
	} {
		t.Run(tc.metric, func(t *testing.T) {
			got := nonZeroSeries(t, tc.c, tc.metric)
			if len(got) != 1 || got[0] != tc.want {
				t.Errorf("non-zero series = %v, want [%s]", got, tc.want)
			}
		})
	}
}

func TestNilSetsRecordNothing(t *testing.T) {
	var h *metrics.Host
	var w *metrics.Worker
	// Every method must be callable on nil; a panic fails the test.
	knownWorkload(h, w)
	w.Serving("echo", false)
	w.SetUp(false)
	h.SessionFinished(metrics.SessionFailed)
}

func TestRegisteringTwiceSharesTheSet(t *testing.T) {
	reg := prometheus.NewRegistry()
	h1, h2 := metrics.NewHost(reg), metrics.NewHost(reg)
	w1, w2 := metrics.NewWorker(reg), metrics.NewWorker(reg)
	if h1 != h2 || w1 != w2 {
		t.Fatal("second registration built a separate set")
	}
	h1.OperationStarted("echo")
	h2.OperationStarted("echo")
	if got, _ := sampleValue(gatherSet(t, h1), "splash_operations_started_total", map[string]string{"tool": "echo"}); got != 2 {
		t.Errorf("shared counter = %v, want 2", got)
	}
}

func TestConflictingRegistrationPanics(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: "splash_sessions_active", Help: "clash"}))
	defer func() {
		if recover() == nil {
			t.Error("NewHost registered over a clashing metric without panicking")
		}
	}()
	metrics.NewHost(reg)
}

func TestNegativeDurationsClampToZero(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := metrics.NewHost(reg)
	h.OperationDispatched("echo", -time.Second) // worker clock behind the host's
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range families {
		if mf.GetName() != "splash_dispatch_latency_seconds" {
			continue
		}
		hist := mf.GetMetric()[0].GetHistogram()
		if hist.GetSampleCount() != 1 || hist.GetSampleSum() != 0 {
			t.Errorf("count=%d sum=%v, want 1 and 0", hist.GetSampleCount(), hist.GetSampleSum())
		}
		return
	}
	t.Error("no dispatch latency series")
}

func TestConcurrentRecording(t *testing.T) {
	h := metrics.NewHost(nil, metrics.WithMaxTools(4))
	var wg sync.WaitGroup
	tools := []string{"a", "b", "c", "d", "e", "f"}
	for i := range 32 {
		wg.Go(func() {
			for j := range 100 {
				h.OperationStarted(tools[(i+j)%len(tools)])
			}
		})
	}
	wg.Wait()
	series := nonZeroSeries(t, h, "splash_operations_started_total")
	if len(series) > 5 { // four tools and other
		t.Errorf("%d tool series, want at most 5: %v", len(series), series)
	}
	total := 0.0
	families := gatherSet(t, h)
	for _, m := range families["splash_operations_started_total"].GetMetric() {
		total += m.GetCounter().GetValue()
	}
	if total != 3200 {
		t.Errorf("total started = %v, want 3200", total)
	}
}
