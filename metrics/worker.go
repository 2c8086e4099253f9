package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Worker is the collector set of a worker process: handler runs, dedupe
// and redelivery counts, and the tools it is currently serving. All methods
// are safe for concurrent use; every method of a nil *Worker does nothing.
type Worker struct {
	set
	tools *toolGuard

	inFlight, serving      *prometheus.GaugeVec
	up                     prometheus.Gauge
	dedupeHits, redelivers *prometheus.CounterVec
	invocations            *prometheus.CounterVec
	handlerDuration        *prometheus.HistogramVec
	authFailures           *prometheus.CounterVec
	contractMismatches     *prometheus.CounterVec
	reconciliations        *prometheus.CounterVec

	// Process tools.
	procStarted, procRestarts, procWatchdog, procPoisoned *prometheus.CounterVec
	procInFlight                                          *prometheus.GaugeVec
}

// NewWorker builds the worker collector set and registers it with reg (nil
// registers nothing). Pass WithTools with the tools the process serves to
// bound the tool label to exactly those.
func NewWorker(reg prometheus.Registerer, opts ...Option) *Worker {
	o := buildOptions(opts)
	b := builder{constLabels: o.constLabels}
	w := &Worker{
		inFlight: b.gauge("splash_worker_in_flight",
			"Invocations this worker is processing right now, by tool.", "tool"),
		serving: b.gauge("splash_worker_serving",
			"1 while this worker pulls work for the tool, 0 while it drains or has stopped.", "tool"),
		up: prometheus.NewGauge(prometheus.GaugeOpts{Name: "splash_worker_up",
			Help: "1 while this worker accepts new work, 0 while it drains.", ConstLabels: o.constLabels}),
		dedupeHits: b.counter("splash_worker_dedupe_hits_total",
			"Invocations answered from the idempotency journal instead of running the handler.", "tool"),
		redelivers: b.counter("splash_worker_redeliveries_total",
			"Invocation messages the stream delivered more than once.", "tool"),
		invocations: b.counter("splash_worker_invocations_total",
			"Handler runs that ended, by tool and outcome.", "tool", "outcome"),
		handlerDuration: b.histogram("splash_worker_handler_duration_seconds",
			"Time one handler run took, by tool and outcome.", durationBuckets, "tool", "outcome"),
		authFailures: b.counter("splash_worker_auth_failures_total",
			"Invocation or cancel frames this worker refused for failed authentication, by reason.", "reason"),
		contractMismatches: b.counter("splash_worker_contract_mismatches_total",
			"Invocations refused because the host called the tool under another definition.", "tool"),
		reconciliations: b.counter("splash_worker_reconciliations_total",
			"Reconciliation requests this worker answered, by tool and the operation state it reported.", "tool", "status"),
		procStarted: b.counter("splash_toolproc_processes_started_total",
			"Tool processes started, by tool.", "tool"),
		procRestarts: b.counter("splash_toolproc_restarts_total",
			"Tool processes started to replace a lost one, by tool.", "tool"),
		procWatchdog: b.counter("splash_toolproc_watchdog_stops_total",
			"Tool processes the watchdog stopped because a call passed its deadline, by tool.", "tool"),
		procPoisoned: b.counter("splash_toolproc_poisoned_total",
			"Tool process sessions given up, by tool and reason.", "tool", "reason"),
		procInFlight: b.gauge("splash_toolproc_in_flight",
			"Calls in flight in the tool's process.", "tool"),
	}
	w.set = set{w.inFlight, w.serving, w.up, w.dedupeHits, w.redelivers, w.invocations, w.handlerDuration, w.authFailures,
		w.contractMismatches, w.reconciliations, w.procStarted, w.procRestarts, w.procWatchdog, w.procPoisoned, w.procInFlight}
	w.tools = newToolGuard(o, w.initTool)
	initAll(w.authFailures, authReasons)
	return register(reg, w)
}

func (w *Worker) initTool(tool string) {
	w.inFlight.WithLabelValues(tool)
	w.dedupeHits.WithLabelValues(tool)
	w.redelivers.WithLabelValues(tool)
	initAll(w.invocations, handlerResult, tool)
	w.contractMismatches.WithLabelValues(tool)
	initAll(w.reconciliations, reconciled, tool)
	w.procStarted.WithLabelValues(tool)
	w.procRestarts.WithLabelValues(tool)
	w.procWatchdog.WithLabelValues(tool)
	w.procInFlight.WithLabelValues(tool)
	initAll(w.procPoisoned, poisonReasons, tool)
}

// SetUp reports whether the worker accepts new work.
func (w *Worker) SetUp(up bool) {
	if w == nil {
		return
	}
	w.up.Set(boolGauge(up))
}

// Serving reports whether the worker pulls work for tool. Alerts join this
// with the host's pending gauge to find tools that have queued work and no
// worker.
func (w *Worker) Serving(tool string, serving bool) {
	if w == nil {
		return
	}
	w.serving.WithLabelValues(w.tools.value(tool)).Set(boolGauge(serving))
}

// HandlerStarted counts a handler run as in flight.
func (w *Worker) HandlerStarted(tool string) {
	if w == nil {
		return
	}
	w.inFlight.WithLabelValues(w.tools.value(tool)).Inc()
}

// HandlerDone ends a run begun with HandlerStarted: it leaves the in-flight
// gauge and is counted with its outcome (one of the Handler constants) and
// duration d.
func (w *Worker) HandlerDone(tool, outcome string, d time.Duration) {
	w.HandlerDoneInTrace(tool, outcome, d, "")
}

// HandlerDoneInTrace is HandlerDone with the run's trace id as the
// duration's exemplar ("" for none).
func (w *Worker) HandlerDoneInTrace(tool, outcome string, d time.Duration, traceID string) {
	if w == nil {
		return
	}
	t := w.tools.value(tool)
	o := oneOf(outcome, handlerResult)
	w.inFlight.WithLabelValues(t).Dec()
	w.invocations.WithLabelValues(t, o).Inc()
	observe(w.handlerDuration.WithLabelValues(t, o), seconds(d), traceID)
}

// DedupeHit counts an invocation answered from the journal.
func (w *Worker) DedupeHit(tool string) {
	if w == nil {
		return
	}
	w.dedupeHits.WithLabelValues(w.tools.value(tool)).Inc()
}

// Redelivered counts an invocation message delivered more than once.
func (w *Worker) Redelivered(tool string) {
	if w == nil {
		return
	}
	w.redelivers.WithLabelValues(w.tools.value(tool)).Inc()
}

// AuthFailure counts a frame refused for failed authentication; reason is
// one of the Auth constants.
func (w *Worker) AuthFailure(reason string) {
	if w == nil {
		return
	}
	w.authFailures.WithLabelValues(oneOf(reason, authReasons)).Inc()
}

func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// ContractMismatch counts an invocation refused because the host called
// the tool under another definition.
func (w *Worker) ContractMismatch(tool string) {
	if w == nil {
		return
	}
	w.contractMismatches.WithLabelValues(w.tools.value(tool)).Inc()
}

// Reconciled counts a reconciliation request answered for tool; status is
// one of the Reconcile constants.
func (w *Worker) Reconciled(tool, status string) {
	if w == nil {
		return
	}
	w.reconciliations.WithLabelValues(w.tools.value(tool), oneOf(status, reconciled)).Inc()
}

// ProcessStarted counts a tool process start.
func (w *Worker) ProcessStarted(tool string) {
	if w == nil {
		return
	}
	w.procStarted.WithLabelValues(w.tools.value(tool)).Inc()
}

// ProcessRestarted counts a start that replaces a lost process.
func (w *Worker) ProcessRestarted(tool string) {
	if w == nil {
		return
	}
	w.procRestarts.WithLabelValues(w.tools.value(tool)).Inc()
}

// ProcessPoisoned counts a session given up; reason is one of the Poison
// constants.
func (w *Worker) ProcessPoisoned(tool, reason string) {
	if w == nil {
		return
	}
	w.procPoisoned.WithLabelValues(w.tools.value(tool), oneOf(reason, poisonReasons)).Inc()
}

// WatchdogStop counts a process stopped at a call's deadline.
func (w *Worker) WatchdogStop(tool string) {
	if w == nil {
		return
	}
	w.procWatchdog.WithLabelValues(w.tools.value(tool)).Inc()
}

// ProcessInFlight sets the calls in flight in the tool's process.
func (w *Worker) ProcessInFlight(tool string, n int) {
	if w == nil {
		return
	}
	w.procInFlight.WithLabelValues(w.tools.value(tool)).Set(float64(n))
}
