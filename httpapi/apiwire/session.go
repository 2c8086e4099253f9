package apiwire

import "time"

// SubmitRequest is the body of POST /v1/sessions.
type SubmitRequest struct {
	Source string `json:"source"`
	// Grants replaces the host's default capabilities; null or absent
	// keeps them, [] grants none.
	Grants []string `json:"grants"`
	// Tools are the tool patterns the session may call: dot-separated
	// names where "*" stands for one segment and a final ">" for one or
	// more ("demo.*", "text.>", "demo.upper"). They must lie within the
	// token's own; null or absent takes the token's, [] grants none. A
	// call outside them fails in the script, before it uses budget. Nil
	// is left out of the JSON, so a client may talk to a host older than
	// the field.
	Tools             []string `json:"tools,omitzero"`
	ToolCallBudget    int      `json:"tool_call_budget,omitempty"`
	MaxPending        int      `json:"max_pending,omitempty"`
	ExecutionBudgetMS int64    `json:"execution_budget_ms,omitempty"`
	// Restart says what happens to the session if its host goes away
	// before it ends: "resume" (a later host carries it on from its
	// ledger) or "fail"; absent takes the host's default.
	Restart string `json:"restart,omitempty"`
	// MaxLifetimeMS, when set, ends the session once it has lived this
	// many milliseconds (error_code max_lifetime), however long its
	// calls wait; absent, it lives as long as its script waits.
	MaxLifetimeMS int64 `json:"max_lifetime_ms,omitempty"`
	// WaitMS holds the answer until the session ends or this many
	// milliseconds pass, whichever is first (at most the server's
	// maximum, 15 s by default): a client that only wants the outcome
	// gets it in one exchange instead of a submit and an event stream.
	// The answer is the session as it stands then; zero answers once the
	// script's first step has run.
	WaitMS int64 `json:"wait_ms,omitempty"`
}

// Session is a session's snapshot as the API reports it.
type Session struct {
	ID    string  `json:"id"`
	State string  `json:"state"`
	Value *string `json:"value,omitempty"`
	Error string  `json:"error,omitempty"`
	// ErrorCode is set for a failure the API names with a stable code
	// (docs/api.md, "Objects" and "Lost sessions"): host_restarted, host_stopped,
	// nondeterministic, ...
	ErrorCode string    `json:"error_code,omitempty"`
	Created   time.Time `json:"created"`
	// Truncated says the host's archive cut value or error to fit.
	Truncated  bool        `json:"truncated,omitempty"`
	Operations []Operation `json:"operations"`
	// TraceID is the session's trace (32 hex digits) when the host
	// traced its submission; TraceURL is where to look at it, when the
	// host was told (httpapi.Config.TraceURL).
	TraceID  string `json:"trace_id,omitempty"`
	TraceURL string `json:"trace_url,omitempty"`
}

// Operation is one live operation.
type Operation struct {
	Session           string    `json:"session"`
	ID                string    `json:"id"`
	RequestID         string    `json:"request_id"`
	Tool              string    `json:"tool"`
	State             string    `json:"state"`
	Attempt           uint32    `json:"attempt"`
	Worker            string    `json:"worker,omitempty"`
	Since             time.Time `json:"since"`
	CancelDisposition string    `json:"cancel_disposition,omitempty"`
}

// OperationList is the body of GET /v1/operations.
type OperationList struct {
	Operations []Operation `json:"operations"`
}

// AuditEntry is one audit event.
type AuditEntry struct {
	Seq        uint64    `json:"seq"`
	At         time.Time `json:"at"`
	Operation  string    `json:"operation"`
	Tool       string    `json:"tool"`
	CallIndex  uint64    `json:"call_index"`
	Attempt    uint32    `json:"attempt"`
	Outcome    string    `json:"outcome"`
	Detail     string    `json:"detail,omitempty"`
	Bytes      int       `json:"bytes,omitempty"`
	RetryClass string    `json:"retry_class,omitempty"`
}

// AuditLog is the body of GET /v1/sessions/{id}/audit.
type AuditLog struct {
	Session string       `json:"session"`
	Events  []AuditEntry `json:"events"`
}

// Chunk is the data of an event-stream "chunk" event: one released
// (redacted) piece of a streaming tool's output.
type Chunk struct {
	Operation     string `json:"operation"`
	Tool          string `json:"tool"`
	Index         int    `json:"index"`
	Text          string `json:"text"`
	SourceBytes   int    `json:"source_bytes"`
	ReleasedBytes int    `json:"released_bytes"`
}

// SessionCancelResponse is the body of POST /v1/sessions/{id}/cancel: the
// session as the cancel left it. Without force its live operations are
// being cancelled (their workers asked) and it ends cancelled once they
// all settled; with force it has ended.
type SessionCancelResponse struct {
	Session
	Forced bool `json:"forced"`
}

// ReconcileResponse is the body of POST /v1/sessions/{id}/reconcile.
type ReconcileResponse struct {
	Session string `json:"session"`
	// Operations is how many live operations the host asks its workers
	// about now.
	Operations int `json:"operations"`
}

// CancelResponse is the body of a successful cancel.
type CancelResponse struct {
	Session   string `json:"session"`
	Operation string `json:"operation"`
	// Cancellation is "requested": the worker has been asked; the
	// operation ends when it acknowledges or a result wins the race.
	Cancellation string `json:"cancellation"`
}

// SessionSummary is one line of GET /v1/sessions.
type SessionSummary struct {
	ID        string    `json:"id"`
	State     string    `json:"state"`
	Value     *string   `json:"value,omitempty"`
	Error     string    `json:"error,omitempty"`
	ErrorCode string    `json:"error_code,omitempty"`
	Created   time.Time `json:"created"`
	// Updated is when the host last saw the session change.
	Updated   time.Time `json:"updated"`
	Truncated bool      `json:"truncated,omitempty"`
	// Tools lists the tools the session used, in the order first used.
	Tools []string `json:"tools"`
	// Operations counts the session's live operations.
	Operations int `json:"operations"`
}

// SessionList is the body of GET /v1/sessions.
type SessionList struct {
	Sessions []SessionSummary `json:"sessions"`
}

// Source is the body of GET /v1/sessions/{id}/source.
type Source struct {
	Session string `json:"session"`
	Source  string `json:"source"`
	// Truncated says the host kept only the source's beginning.
	Truncated bool `json:"truncated,omitempty"`
}

// Session states, as Session.State and SessionSummary.State report them.
const (
	StateSuspended = "suspended"
	StateCompleted = "completed"
	StateFailed    = "failed"
	// StateCancelled: an operator ended the session.
	StateCancelled = "cancelled"
)

// Terminal reports whether the session's script has ended.
func (s Session) Terminal() bool { return terminal(s.State) }

func terminal(state string) bool {
	return state == StateCompleted || state == StateFailed || state == StateCancelled
}
