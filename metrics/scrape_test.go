package metrics_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/splashfabric/splashfabric/metrics"
)

// knownWorkload drives a host and a worker through a fixed story: three echo
// operations (one succeeds first time, one after a transient retry, one times
// out), a cancelled sleep, a redacted stream, a forged frame and a replayed
// one, and a reconciliation answered.
func knownWorkload(h *metrics.Host, w *metrics.Worker) {
	h.SessionStarted()
	h.SessionStarted()
	for range 3 {
		h.OperationStarted("echo")
	}
	h.SetQueue("echo", 1, 2)
	h.OperationDispatched("echo", 20*time.Millisecond)
	h.OperationDispatched("echo", 30*time.Millisecond)
	h.OperationRetried("echo", metrics.RetryTransient)
	h.OperationFinished("echo", metrics.OutcomeSucceeded, 200*time.Millisecond)
	h.OperationFinished("echo", metrics.OutcomeSucceeded, 700*time.Millisecond)
	h.OperationFinished("echo", metrics.OutcomeTimedOut, 40*time.Second)
	h.SetQueue("echo", 0, 0)

	h.OperationStarted("sleep")
	h.CancellationRequested("sleep")
	h.CancellationAnswered("sleep", metrics.DispositionAcknowledged)
	h.OperationFinished("sleep", metrics.OutcomeCancelled, 3*time.Second)

	h.ChunkReceived("stream", 100)
	h.ChunkReleased("stream", 90)
	h.ChunkReceived("stream", 50)
	h.ChunkDenied("stream", 50)

	h.AuthFailure(metrics.AuthBadTag)
	h.FrameRejected(metrics.RejectUnknownOperation)
	h.SessionFinished(metrics.SessionCompleted)

	w.SetUp(true)
	w.Serving("echo", true)
	w.HandlerStarted("echo")
	w.HandlerDone("echo", metrics.HandlerRetryTransient, 10*time.Millisecond)
	w.HandlerStarted("echo")
	w.HandlerDone("echo", metrics.HandlerSucceeded, 15*time.Millisecond)
	w.HandlerStarted("echo")
	w.Redelivered("echo")
	w.DedupeHit("echo")
	w.AuthFailure(metrics.AuthSequence)
	w.Reconciled("echo", metrics.ReconcileSucceeded)
}

func TestScrapeAfterKnownWorkload(t *testing.T) {
	reg := metrics.NewRegistry()
	h := metrics.NewHost(reg)
	w := metrics.NewWorker(reg, metrics.WithTools("echo"))
	knownWorkload(h, w)

	srv := httptest.NewServer(metrics.Handler(reg))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(bytesReader(body))
	if err != nil {
		t.Fatalf("parse exposition: %v\n%s", err, body)
	}

	tests := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"splash_operations_started_total", map[string]string{"tool": "echo"}, 3},
		{"splash_operations_finished_total", map[string]string{"tool": "echo", "outcome": "succeeded"}, 2},
		{"splash_operations_finished_total", map[string]string{"tool": "echo", "outcome": "timed_out"}, 1},
		{"splash_operations_finished_total", map[string]string{"tool": "echo", "outcome": "failed"}, 0},
		{"splash_operations_finished_total", map[string]string{"tool": "sleep", "outcome": "cancelled"}, 1},
		{"splash_operation_duration_seconds", map[string]string{"tool": "echo"}, 3},
		{"splash_dispatch_latency_seconds", map[string]string{"tool": "echo"}, 2},
		{"splash_retries_total", map[string]string{"tool": "echo", "class": "transient"}, 1},
		{"splash_retries_total", map[string]string{"tool": "echo", "class": "rate_limited"}, 0},
		{"splash_operations_pending", map[string]string{"tool": "echo"}, 0},
		{"splash_operations_claimed", map[string]string{"tool": "echo"}, 0},
		{"splash_stream_chunks_total", map[string]string{"tool": "stream", "source": "source"}, 2},
		{"splash_stream_chunks_total", map[string]string{"tool": "stream", "source": "redacted"}, 1},
		{"splash_stream_chunks_total", map[string]string{"tool": "stream", "source": "denied"}, 1},
		{"splash_stream_bytes_total", map[string]string{"tool": "stream", "source": "source"}, 150},
		{"splash_stream_bytes_total", map[string]string{"tool": "stream", "source": "redacted"}, 90},
		{"splash_cancellation_requests_total", map[string]string{"tool": "sleep"}, 1},
		{"splash_cancellations_total", map[string]string{"tool": "sleep", "disposition": "acknowledged"}, 1},
		{"splash_cancellations_total", map[string]string{"tool": "sleep", "disposition": "too_late"}, 0},
		{"splash_auth_failures_total", map[string]string{"reason": "bad_tag"}, 1},
		{"splash_auth_failures_total", map[string]string{"reason": "wrong_token"}, 0},
		{"splash_frames_rejected_total", map[string]string{"reason": "unknown_operation"}, 1},
		{"splash_sessions_total", map[string]string{"state": "completed"}, 1},
		{"splash_sessions_active", nil, 1},
		{"splash_worker_up", nil, 1},
		{"splash_worker_serving", map[string]string{"tool": "echo"}, 1},
		{"splash_worker_in_flight", map[string]string{"tool": "echo"}, 1},
		{"splash_worker_invocations_total", map[string]string{"tool": "echo", "outcome": "succeeded"}, 1},
		{"splash_worker_invocations_total", map[string]string{"tool": "echo", "outcome": "retry_transient"}, 1},
		{"splash_worker_handler_duration_seconds", map[string]string{"tool": "echo", "outcome": "succeeded"}, 1},
		{"splash_worker_dedupe_hits_total", map[string]string{"tool": "echo"}, 1},
		{"splash_worker_redeliveries_total", map[string]string{"tool": "echo"}, 1},
		{"splash_worker_auth_failures_total", map[string]string{"reason": "sequence"}, 1},
		{"splash_worker_reconciliations_total", map[string]string{"tool": "echo", "status": "succeeded"}, 1},
		{"splash_worker_reconciliations_total", map[string]string{"tool": "echo", "status": "unknown"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := sampleValue(families, tt.name, tt.labels)
			if !ok {
				t.Fatalf("no sample %s%v in scrape", tt.name, tt.labels)
			}
			if got != tt.want {
				t.Errorf("%s%v = %v, want %v", tt.name, tt.labels, got, tt.want)
			}
		})
	}

	// The registry carries the runtime collectors alongside the project's.
	for _, name := range []string{"go_goroutines", "process_cpu_seconds_total"} {
		if _, ok := families[name]; !ok {
			t.Errorf("scrape lacks %s", name)
		}
	}
	// The histogram is cumulative: the 40s timeout lands above the 30s bucket.
	if got := bucketCount(families, "splash_operation_duration_seconds", map[string]string{"tool": "echo"}, 30); got != 2 {
		t.Errorf("echo duration le=30 bucket = %v, want 2", got)
	}
}
