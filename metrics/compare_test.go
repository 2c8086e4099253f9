package metrics_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"

	"github.com/splashfabric/splashfabric/metrics"
)

func TestHostExposition(t *testing.T) {
	h := metrics.NewHost(nil)
	h.OperationStarted("echo")
	h.OperationRetried("echo", metrics.RetryRateLimited)
	h.OperationFinished("echo", metrics.OutcomeFailed, time.Second)

	want := exposition(
		`# HELP splash_operations_finished_total External tool operations that reached a terminal state, by tool and outcome.`,
		`# TYPE splash_operations_finished_total counter`,
		`splash_operations_finished_total{outcome="cancelled",tool="echo"} 0`,
		`splash_operations_finished_total{outcome="failed",tool="echo"} 1`,
		`splash_operations_finished_total{outcome="indeterminate",tool="echo"} 0`,
		`splash_operations_finished_total{outcome="succeeded",tool="echo"} 0`,
		`splash_operations_finished_total{outcome="timed_out",tool="echo"} 0`,
		`# HELP splash_retries_total Retry attempts the host scheduled after a retryable worker failure, by tool and class.`,
		`# TYPE splash_retries_total counter`,
		`splash_retries_total{class="rate_limited",tool="echo"} 1`,
		`splash_retries_total{class="transient",tool="echo"} 0`,
	)
	if err := collectAndCompare(h, want, "splash_operations_finished_total", "splash_retries_total"); err != nil {
		t.Error(err)
	}
}

func TestWorkerExposition(t *testing.T) {
	w := metrics.NewWorker(nil, metrics.WithConstLabels(map[string]string{"pool": "blue"}))
	w.HandlerStarted("upper")
	w.HandlerStarted("upper")
	w.HandlerDone("upper", metrics.HandlerSucceeded, 2*time.Millisecond)
	w.DedupeHit("upper")
	w.Reconciled("upper", metrics.ReconcileUnknown)

	want := exposition(
		`# HELP splash_worker_in_flight Invocations this worker is processing right now, by tool.`,
		`# TYPE splash_worker_in_flight gauge`,
		`splash_worker_in_flight{pool="blue",tool="upper"} 1`,
		`# HELP splash_worker_dedupe_hits_total Invocations answered from the idempotency journal instead of running the handler.`,
		`# TYPE splash_worker_dedupe_hits_total counter`,
		`splash_worker_dedupe_hits_total{pool="blue",tool="upper"} 1`,
		`# HELP splash_worker_reconciliations_total Reconciliation requests this worker answered, by tool and the operation state it reported.`,
		`# TYPE splash_worker_reconciliations_total counter`,
		`splash_worker_reconciliations_total{pool="blue",status="cancelled",tool="upper"} 0`,
		`splash_worker_reconciliations_total{pool="blue",status="failed",tool="upper"} 0`,
		`splash_worker_reconciliations_total{pool="blue",status="running",tool="upper"} 0`,
		`splash_worker_reconciliations_total{pool="blue",status="succeeded",tool="upper"} 0`,
		`splash_worker_reconciliations_total{pool="blue",status="unknown",tool="upper"} 1`,
	)
	if err := collectAndCompare(w, want, "splash_worker_in_flight", "splash_worker_dedupe_hits_total", "splash_worker_reconciliations_total"); err != nil {
		t.Error(err)
	}
}

func TestProcessToolExposition(t *testing.T) {
	w := metrics.NewWorker(nil, metrics.WithTools("text.slowupper"))
	w.ProcessStarted("text.slowupper")
	w.ProcessStarted("text.slowupper")
	w.ProcessRestarted("text.slowupper")
	w.ProcessPoisoned("text.slowupper", metrics.PoisonBadTag)
	w.ProcessPoisoned("text.slowupper", "made-up reason")
	w.WatchdogStop("text.slowupper")
	w.ProcessInFlight("text.slowupper", 3)
	w.ContractMismatch("text.slowupper")

	want := exposition(
		`# HELP splash_toolproc_processes_started_total Tool processes started, by tool.`,
		`# TYPE splash_toolproc_processes_started_total counter`,
		`splash_toolproc_processes_started_total{tool="text.slowupper"} 2`,
		`# HELP splash_toolproc_restarts_total Tool processes started to replace a lost one, by tool.`,
		`# TYPE splash_toolproc_restarts_total counter`,
		`splash_toolproc_restarts_total{tool="text.slowupper"} 1`,
		`# HELP splash_toolproc_watchdog_stops_total Tool processes the watchdog stopped because a call passed its deadline, by tool.`,
		`# TYPE splash_toolproc_watchdog_stops_total counter`,
		`splash_toolproc_watchdog_stops_total{tool="text.slowupper"} 1`,
		`# HELP splash_toolproc_in_flight Calls in flight in the tool's process.`,
		`# TYPE splash_toolproc_in_flight gauge`,
		`splash_toolproc_in_flight{tool="text.slowupper"} 3`,
		`# HELP splash_worker_contract_mismatches_total Invocations refused because the host called the tool under another definition.`,
		`# TYPE splash_worker_contract_mismatches_total counter`,
		`splash_worker_contract_mismatches_total{tool="text.slowupper"} 1`,
	)
	if err := collectAndCompare(w, want, "splash_toolproc_processes_started_total", "splash_toolproc_restarts_total",
		"splash_toolproc_watchdog_stops_total", "splash_toolproc_in_flight", "splash_worker_contract_mismatches_total"); err != nil {
		t.Error(err)
	}
	// Reasons come from a closed set: anything else is "other", and a
	// reason's series exists before it first counts.
	if got, _ := sampleValue(gatherSet(t, w), "splash_toolproc_poisoned_total", map[string]string{"tool": "text.slowupper", "reason": metrics.PoisonBadTag}); got != 1 {
		t.Errorf("bad_tag poisonings %v, want 1", got)
	}
	if got, _ := sampleValue(gatherSet(t, w), "splash_toolproc_poisoned_total", map[string]string{"tool": "text.slowupper", "reason": metrics.Other}); got != 1 {
		t.Errorf("other poisonings %v, want 1", got)
	}
	if got, _ := sampleValue(gatherSet(t, w), "splash_toolproc_poisoned_total", map[string]string{"tool": "text.slowupper", "reason": metrics.PoisonWatchdog}); got != 0 {
		t.Errorf("watchdog poisonings %v, want 0", got)
	}
}

func TestCollectorsPassLint(t *testing.T) {
	h := metrics.NewHost(nil)
	w := metrics.NewWorker(nil)
	knownWorkload(h, w)
	for _, tc := range []struct {
		name string
		c    prometheus.Collector
	}{{"host", h}, {"worker", w}} {
		t.Run(tc.name, func(t *testing.T) {
			var families []*dto.MetricFamily
			for _, mf := range gatherSet(t, tc.c) {
				families = append(families, mf)
			}
			problems, err := promlint.NewWithMetricFamilies(families).Lint()
			if err != nil {
				t.Fatal(err)
			}
			if len(families) == 0 {
				t.Fatal("nothing to lint")
			}
			for _, p := range problems {
				t.Errorf("%s: %s", p.Metric, p.Text)
			}
		})
	}
}
