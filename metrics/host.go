package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Host is the collector set of a host process: operations it dispatches,
// sessions it runs, and frames it refuses. All methods are safe for
// concurrent use, and every method of a nil *Host does nothing, so a
// component built without metrics needs no special case.
type Host struct {
	set
	tools *toolGuard

	started, finished, retries       *prometheus.CounterVec
	duration, dispatch               *prometheus.HistogramVec
	pending, claimed                 *prometheus.GaugeVec
	chunks, bytes                    *prometheus.CounterVec
	cancelRequests, cancellations    *prometheus.CounterVec
	authFailures, sessions, rejected *prometheus.CounterVec
	overBudget, resumeFailures       *prometheus.CounterVec
	publishFailures                  *prometheus.CounterVec
	shed                             prometheus.Counter
	sessionsActive, resuming         prometheus.Gauge
}

// NewHost builds the host collector set and registers it with reg (nil
// registers nothing, for tests that gather the set directly). Registering a
// second Host with the same options into the same registry returns the
// first.
func NewHost(reg prometheus.Registerer, opts ...Option) *Host {
	o := buildOptions(opts)
	b := builder{constLabels: o.constLabels}
	h := &Host{
		started: b.counter("splash_operations_started_total",
			"External tool operations published for dispatch, by tool.", "tool"),
		finished: b.counter("splash_operations_finished_total",
			"External tool operations that reached a terminal state, by tool and outcome.", "tool", "outcome"),
		duration: b.histogram("splash_operation_duration_seconds",
			"Time from an operation's start to its terminal state, across all attempts.", durationBuckets, "tool"),
		dispatch: b.histogram("splash_dispatch_latency_seconds",
			"Time from publishing an attempt to a worker reporting that it started it.", dispatchBuckets, "tool"),
		retries: b.counter("splash_retries_total",
			"Retry attempts the host scheduled after a retryable worker failure, by tool and class.", "tool", "class"),
		pending: b.gauge("splash_operations_pending",
			"Operations published and waiting for a worker to start them.", "tool"),
		claimed: b.gauge("splash_operations_claimed",
			"Operations a worker has started and not yet finished.", "tool"),
		chunks: b.counter("splash_stream_chunks_total",
			"Stream chunks by tool and source: source (sent by a worker), redacted (released to the script), denied (refused by the stream policy).", "tool", "source"),
		bytes: b.counter("splash_stream_bytes_total",
			"Stream chunk bytes by tool and source (see splash_stream_chunks_total).", "tool", "source"),
		cancelRequests: b.counter("splash_cancellation_requests_total",
			"Cancellation requests the host sent to workers, by tool.", "tool"),
		cancellations: b.counter("splash_cancellations_total",
			"Worker answers to cancellation requests, by tool and disposition.", "tool", "disposition"),
		authFailures: b.counter("splash_auth_failures_total",
			"Frames or API requests refused for failed authentication, by reason.", "reason"),
		sessions: b.counter("splash_sessions_total",
			"Script sessions that ended, by terminal state.", "state"),
		sessionsActive: prometheus.NewGauge(prometheus.GaugeOpts{Name: "splash_sessions_active",
			Help: "Script sessions currently running.", ConstLabels: o.constLabels}),
		rejected: b.counter("splash_frames_rejected_total",
			"Frames refused for a reason other than authentication, by reason.", "reason"),
		overBudget: b.counter("splash_sessions_over_budget_total",
			"Script sessions failed for going over one of their budgets, by budget (memory, execution, pending).", "budget"),
		resuming: prometheus.NewGauge(prometheus.GaugeOpts{Name: "splash_sessions_resuming",
			Help: "Durable sessions this host took on from ended processes (its own earlier ones, or adopted) and has not brought back yet.", ConstLabels: o.constLabels}),
		publishFailures: b.counter("splash_publish_failures_total",
			"Invocations the transport refused to publish, by reason: too_large (it can never carry it: the operation fails), refused (published again after a backoff).", "reason"),
		shed: prometheus.NewCounter(prometheus.CounterOpts{Name: "splash_sessions_shed_total",
			Help: "Script sessions the host failed because it was short of memory and they held the most (also counted over their memory budget).", ConstLabels: o.constLabels}),
		resumeFailures: b.counter("splash_resume_failures_total",
			"Durable sessions that could not be resumed, and adoptions that failed, by reason: ledger_rejected (the session fails, its ledger is kept), tools_changed, store (tried again), lease.", "reason"),
	}
	h.set = set{h.started, h.finished, h.duration, h.dispatch, h.retries, h.pending, h.claimed,
		h.chunks, h.bytes, h.cancelRequests, h.cancellations, h.authFailures, h.sessions, h.sessionsActive, h.rejected, h.overBudget,
		h.resuming, h.resumeFailures, h.publishFailures, h.shed}
	h.tools = newToolGuard(o, h.initTool)
	initAll(h.authFailures, authReasons)
	initAll(h.sessions, sessionStates)
	initAll(h.rejected, rejectReasons)
	initAll(h.overBudget, budgets)
	initAll(h.resumeFailures, resumeReasons)
	initAll(h.publishFailures, publishReasons)
	return register(reg, h)
}

// SessionsResuming sets how many durable sessions wait to be brought back.
func (h *Host) SessionsResuming(n int) {
	if h == nil {
		return
	}
	h.resuming.Set(float64(n))
}

// ResumeFailed counts a session that could not be resumed, or an adoption
// that failed, by reason (one of the Resume… constants).
func (h *Host) ResumeFailed(reason string) {
	if h == nil {
		return
	}
	h.resumeFailures.WithLabelValues(oneOf(reason, resumeReasons)).Inc()
}

// initTool creates a tool's counters at zero the first time it is seen, so
// the first failure or retry shows up in increase() and rate().
func (h *Host) initTool(tool string) {
	h.started.WithLabelValues(tool)
	initAll(h.finished, outcomes, tool)
	initAll(h.retries, retryClasses, tool)
	initAll(h.chunks, streamSources, tool)
	initAll(h.bytes, streamSources, tool)
	h.cancelRequests.WithLabelValues(tool)
	initAll(h.cancellations, dispositions, tool)
	h.pending.WithLabelValues(tool)
	h.claimed.WithLabelValues(tool)
}

// OperationStarted counts an operation published for its first attempt.
func (h *Host) OperationStarted(tool string) {
	if h == nil {
		return
	}
	h.started.WithLabelValues(h.tools.value(tool)).Inc()
}

// OperationDispatched records the time between publishing an attempt and
// the worker's reported start of it. A negative d (clock skew between host
// and worker) is recorded as zero rather than dropped, so the count of
// dispatches stays right.
func (h *Host) OperationDispatched(tool string, d time.Duration) {
	h.OperationDispatchedInTrace(tool, d, "")
}

// OperationDispatchedInTrace is OperationDispatched with the operation's
// trace id as the observation's exemplar ("" for none).
func (h *Host) OperationDispatchedInTrace(tool string, d time.Duration, traceID string) {
	if h == nil {
		return
	}
	observe(h.dispatch.WithLabelValues(h.tools.value(tool)), seconds(d), traceID)
}

// OperationRetried counts a retry the host scheduled; class is RetryTransient
// or RetryRateLimited.
func (h *Host) OperationRetried(tool, class string) {
	if h == nil {
		return
	}
	h.retries.WithLabelValues(h.tools.value(tool), oneOf(class, retryClasses)).Inc()
}

// OperationFinished counts an operation's terminal outcome (one of the
// Outcome constants) and records d, the time from OperationStarted to now.
func (h *Host) OperationFinished(tool, outcome string, d time.Duration) {
	h.OperationFinishedInTrace(tool, outcome, d, "")
}

// OperationFinishedInTrace is OperationFinished with the operation's
// trace id as the duration's exemplar ("" for none).
func (h *Host) OperationFinishedInTrace(tool, outcome string, d time.Duration, traceID string) {
	if h == nil {
		return
	}
	t := h.tools.value(tool)
	h.finished.WithLabelValues(t, oneOf(outcome, outcomes)).Inc()
	observe(h.duration.WithLabelValues(t), seconds(d), traceID)
}

// SetQueue sets the pending and claimed gauges of a tool. The host loop
// owns every operation's state, so it recounts and sets absolute values
// after each change instead of adding deltas that could drift on a missed
// transition.
func (h *Host) SetQueue(tool string, pending, claimed int) {
	if h == nil {
		return
	}
	t := h.tools.value(tool)
	h.pending.WithLabelValues(t).Set(float64(pending))
	h.claimed.WithLabelValues(t).Set(float64(claimed))
}

// ChunkReceived counts a chunk as a worker sent it, before redaction.
func (h *Host) ChunkReceived(tool string, bytes int) { h.chunk(tool, StreamSource, bytes) }

// ChunkReleased counts a chunk as the redactor released it to the script.
func (h *Host) ChunkReleased(tool string, bytes int) { h.chunk(tool, StreamRedacted, bytes) }

// ChunkDenied counts a chunk the stream policy refused; bytes is its source
// size.
func (h *Host) ChunkDenied(tool string, bytes int) { h.chunk(tool, StreamDenied, bytes) }

func (h *Host) chunk(tool, source string, bytes int) {
	if h == nil {
		return
	}
	t := h.tools.value(tool)
	h.chunks.WithLabelValues(t, source).Inc()
	if bytes > 0 {
		h.bytes.WithLabelValues(t, source).Add(float64(bytes))
	}
}

// CancellationRequested counts a cancellation request sent for tool.
func (h *Host) CancellationRequested(tool string) {
	if h == nil {
		return
	}
	h.cancelRequests.WithLabelValues(h.tools.value(tool)).Inc()
}

// CancellationAnswered counts a worker's disposition (one of the
// Disposition constants) for a cancellation request.
func (h *Host) CancellationAnswered(tool, disposition string) {
	if h == nil {
		return
	}
	h.cancellations.WithLabelValues(h.tools.value(tool), oneOf(disposition, dispositions)).Inc()
}

// AuthFailure counts a refused frame or API request; reason is one of the
// Auth constants.
func (h *Host) AuthFailure(reason string) {
	if h == nil {
		return
	}
	h.authFailures.WithLabelValues(oneOf(reason, authReasons)).Inc()
}

// FrameRejected counts a frame refused for a reason other than its
// credentials; reason is one of the Reject constants.
func (h *Host) FrameRejected(reason string) {
	if h == nil {
		return
	}
	h.rejected.WithLabelValues(oneOf(reason, rejectReasons)).Inc()
}

// PublishFailed counts an invocation the transport refused (one of the
// Publish constants).
func (h *Host) PublishFailed(reason string) {
	if h == nil {
		return
	}
	h.publishFailures.WithLabelValues(oneOf(reason, publishReasons)).Inc()
}

// SessionShed counts a session failed to give the host its memory back.
func (h *Host) SessionShed() {
	if h == nil {
		return
	}
	h.shed.Inc()
}

// SessionStarted counts a script session that began running.
func (h *Host) SessionStarted() {
	if h == nil {
		return
	}
	h.sessionsActive.Inc()
}

// SessionFinished counts a session that ended in state (one of the Session
// constants) and takes it off the active gauge.
func (h *Host) SessionFinished(state string) {
	if h == nil {
		return
	}
	h.sessions.WithLabelValues(oneOf(state, sessionStates)).Inc()
	h.sessionsActive.Dec()
}

// SessionOverBudget counts a session failed for going over budget (one of
// the Budget constants); SessionFinished counts it as failed as well.
func (h *Host) SessionOverBudget(budget string) {
	if h == nil {
		return
	}
	h.overBudget.WithLabelValues(oneOf(budget, budgets)).Inc()
}

// seconds converts d to the base unit, clamping negatives to zero.
func seconds(d time.Duration) float64 {
	if d < 0 {
		return 0
	}
	return d.Seconds()
}
