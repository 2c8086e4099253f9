package metrics

// Label values. Every label the package exports takes its value from one of
// these closed sets; anything else is recorded as Other so that a caller's
// typo or an attacker-chosen string cannot grow a series set without bound.
const (
	// Other replaces any label value outside the documented set.
	Other = "other"
)

// Terminal outcomes of an operation as the host sees it
// (splash_operations_finished_total, splash_operation_duration_seconds).
const (
	OutcomeSucceeded     = "succeeded"
	OutcomeFailed        = "failed"
	OutcomeTimedOut      = "timed_out"
	OutcomeCancelled     = "cancelled"
	OutcomeIndeterminate = "indeterminate"
)

// Outcomes of one handler run on a worker (splash_worker_invocations_total,
// splash_worker_handler_duration_seconds). They follow the result statuses a
// worker can publish.
const (
	HandlerSucceeded        = "succeeded"
	HandlerFailed           = "failed"
	HandlerRetryTransient   = "retry_transient"
	HandlerRetryRateLimited = "retry_rate_limited"
	HandlerCancelled        = "cancelled"
	HandlerIndeterminate    = "indeterminate"
	// HandlerHandedBack: the call went back to the stream for another
	// delivery instead of being answered.
	HandlerHandedBack = "handed_back"
)

// Reasons a process tool's session is poisoned
// (splash_toolproc_poisoned_total); they mirror package toolproc's.
const (
	PoisonGarbage        = "garbage"
	PoisonTooLong        = "too_long"
	PoisonBadTag         = "bad_tag"
	PoisonWrongSession   = "wrong_session"
	PoisonSequence       = "sequence"
	PoisonUnknownRequest = "unknown_request"
	PoisonContradictory  = "contradictory"
	PoisonInvalidMessage = "invalid_message"
	PoisonFlood          = "flood"
	PoisonExited         = "exited"
	PoisonWatchdog       = "watchdog"
	PoisonStopped        = "stopped"
	// A cancelled call that did not end within its cancel grace: its tool
	// gave no answer, or answered unsupported.
	PoisonCancelUnanswered  = "cancel_unanswered"
	PoisonCancelUnsupported = "cancel_unsupported"
	PoisonMCP               = "mcp_protocol"
	// A call without a deadline that ran past the worker's maximum.
	PoisonMaxRuntime = "max_runtime"
	// A sandbox that reached one of its limits.
	PoisonMemoryLimit   = "memory_limit"
	PoisonCPULimit      = "cpu_limit"
	PoisonPidsLimit     = "pids_limit"
	PoisonFileSizeLimit = "file_size_limit"
	PoisonTmpFull       = "tmp_full"
)

// Operation states a worker answers a reconciliation request with
// (splash_worker_reconciliations_total); they mirror protocol's.
const (
	ReconcileRunning   = "running"
	ReconcileSucceeded = "succeeded"
	ReconcileFailed    = "failed"
	ReconcileCancelled = "cancelled"
	ReconcileUnknown   = "unknown"
)

// Retry classes (splash_retries_total).
const (
	RetryTransient   = "transient"
	RetryRateLimited = "rate_limited"
)

// Worker answers to a cancellation request (splash_cancellations_total).
const (
	DispositionAcknowledged = "acknowledged"
	DispositionTooLate      = "too_late"
	DispositionUnsupported  = "unsupported"
)

// Authentication failure reasons (splash_auth_failures_total,
// splash_worker_auth_failures_total). The frame reasons mirror the checks a
// receiver makes on a sealed frame; the token reasons belong to the HTTP API.
const (
	AuthBadTag       = "bad_tag"
	AuthWrongRole    = "wrong_role"
	AuthWrongSession = "wrong_session"
	AuthSequence     = "sequence"
	AuthWrongSubject = "wrong_subject"
	// AuthUnknownKey: sealed with a key the receiver's ring lacks (a key
	// dropped too early, or promoted before every receiver held it).
	AuthUnknownKey = "unknown_key"
	// AuthWrongPool: sealed with the key of a pool that does not serve
	// the tool it answers for.
	AuthWrongPool = "wrong_pool"
	// AuthMalformed: not a sealed frame at all (garbage, an oversized or
	// unparsable frame, a bad host header); only workers count it here, the
	// host counts it in splash_frames_rejected_total.
	AuthMalformed    = "malformed"
	AuthMissingToken = "missing_token"
	AuthWrongToken   = "wrong_token"
)

// Reasons an authenticated or unauthenticated frame is refused for reasons
// other than its credentials (splash_frames_rejected_total).
const (
	RejectMalformed        = "malformed"
	RejectTooLarge         = "too_large"
	RejectInvalidMessage   = "invalid_message"
	RejectUnknownOperation = "unknown_operation"
	RejectWrongAttempt     = "wrong_attempt"
	RejectContradictory    = "contradictory"
	RejectLate             = "late"
	// Reasons of splash_publish_failures_total: the transport can never
	// carry the invocation (its operation fails), or refused it this
	// once (it is published again after a backoff).
	PublishTooLarge = "too_large"
	PublishRefused  = "refused"
)

// Terminal session states (splash_sessions_total).
const (
	SessionCompleted = "completed"
	SessionFailed    = "failed"
	SessionCancelled = "cancelled"
	SessionTimedOut  = "timed_out"
)

// Reasons a durable session could not be resumed, or an incarnation not
// adopted (splash_resume_failures_total).
const (
	// ResumeLedgerRejected: its ledger does not verify or replay; the
	// session fails alone and its ledger is kept.
	ResumeLedgerRejected = "ledger_rejected"
	// ResumeToolsChanged: its pinned tool definitions changed.
	ResumeToolsChanged = "tools_changed"
	// ResumeStore: a store did not answer; it is tried again.
	ResumeStore = "store"
	// ResumeLease: an incarnation's lease could not be taken.
	ResumeLease = "lease"
)

// Stream chunk sources (splash_stream_chunks_total,
// splash_stream_bytes_total): what a worker sent, what the redactor released
// to the script, and what the stream policy refused.
const (
	StreamSource   = "source"
	StreamRedacted = "redacted"
	StreamDenied   = "denied"
)

// Budgets a script session can go over (splash_sessions_over_budget_total).
const (
	BudgetMemory    = "memory"
	BudgetExecution = "execution"
	BudgetPending   = "pending"
)

var (
	outcomes      = []string{OutcomeSucceeded, OutcomeFailed, OutcomeTimedOut, OutcomeCancelled, OutcomeIndeterminate}
	handlerResult = []string{HandlerSucceeded, HandlerFailed, HandlerRetryTransient, HandlerRetryRateLimited, HandlerCancelled, HandlerIndeterminate, HandlerHandedBack}
	poisonReasons = []string{PoisonGarbage, PoisonTooLong, PoisonBadTag, PoisonWrongSession, PoisonSequence, PoisonUnknownRequest,
		PoisonContradictory, PoisonInvalidMessage, PoisonFlood, PoisonExited, PoisonWatchdog, PoisonStopped,
		PoisonCancelUnanswered, PoisonCancelUnsupported, PoisonMCP, PoisonMaxRuntime,
		PoisonMemoryLimit, PoisonCPULimit, PoisonPidsLimit, PoisonFileSizeLimit, PoisonTmpFull}
	retryClasses   = []string{RetryTransient, RetryRateLimited}
	dispositions   = []string{DispositionAcknowledged, DispositionTooLate, DispositionUnsupported}
	authReasons    = []string{AuthBadTag, AuthWrongRole, AuthWrongSession, AuthSequence, AuthWrongSubject, AuthUnknownKey, AuthWrongPool, AuthMalformed, AuthMissingToken, AuthWrongToken}
	publishReasons = []string{PublishTooLarge, PublishRefused}
	rejectReasons  = []string{RejectMalformed, RejectTooLarge, RejectInvalidMessage, RejectUnknownOperation, RejectWrongAttempt, RejectContradictory, RejectLate}
	sessionStates  = []string{SessionCompleted, SessionFailed, SessionCancelled, SessionTimedOut}
	resumeReasons  = []string{ResumeLedgerRejected, ResumeToolsChanged, ResumeStore, ResumeLease}
	budgets        = []string{BudgetMemory, BudgetExecution, BudgetPending}
	streamSources  = []string{StreamSource, StreamRedacted, StreamDenied}
	reconciled     = []string{ReconcileRunning, ReconcileSucceeded, ReconcileFailed, ReconcileCancelled, ReconcileUnknown}
)

// oneOf returns v when it is in set and Other otherwise.
func oneOf(v string, set []string) string {
	for _, s := range set {
		if v == s {
			return v
		}
	}
	return Other
}
