package apiclient

import "github.com/splashfabric/splashfabric/httpapi"

// The wire types are the server's own, so the two sides cannot disagree on
// a field name; docs/api.md describes each.
type (
	// SubmitRequest is a script with its grants and limits.
	SubmitRequest = httpapi.SubmitRequest
	// Session is a session's state, result and live operations.
	Session = httpapi.Session
	// Operation is one live operation of a session.
	Operation = httpapi.Operation
	// AuditLog is a session's audit events, oldest first.
	AuditLog = httpapi.AuditLog
	// AuditEntry is one audit event.
	AuditEntry = httpapi.AuditEntry
	// Chunk is one released (redacted) piece of a streaming tool's output.
	Chunk = httpapi.Chunk
	// CancelResponse is the host's answer to a cancel: requested, not yet
	// done.
	CancelResponse = httpapi.CancelResponse
	// SessionCancelResponse is the session as a session cancel left it.
	SessionCancelResponse = httpapi.SessionCancelResponse
	// ReconcileResponse counts the operations a reconcile asks about.
	ReconcileResponse = httpapi.ReconcileResponse
	// SessionSummary is one line of the host's session list.
	SessionSummary = httpapi.SessionSummary
	// SessionList is the host's session list.
	SessionList = httpapi.SessionList
	// Source is the script a session was submitted with.
	Source = httpapi.Source
	// Tool is one tool of the host's catalog with its pool and workers.
	Tool = httpapi.Tool
	// ToolList is the host's catalog.
	ToolList = httpapi.ToolList
	// Pool is a tool's JetStream consumer, as the server counts it.
	Pool = httpapi.Pool
	// Worker is a worker the host heard from recently.
	Worker = httpapi.Worker
	// WorkerList is the workers the host heard from recently.
	WorkerList = httpapi.WorkerList
)

// Session states, as Session.State reports them.
const (
	StateSuspended = "suspended"
	StateCompleted = "completed"
	StateFailed    = "failed"
	// StateCancelled: an operator ended the session.
	StateCancelled = "cancelled"
)

// Codes Session.ErrorCode reports for a failed session whose host process
// ended while the session was suspended (docs/api.md, "Lost sessions").
const (
	// ErrorHostRestarted: the process was killed or crashed; a later
	// process of the same host answers for the session.
	ErrorHostRestarted = "host_restarted"
	// ErrorHostStopped: the process stopped gracefully and recorded the
	// session as failed.
	ErrorHostStopped = "host_stopped"
	// ErrorNondeterministic: a resumed session's script did not repeat
	// the calls its ledger recorded, so it was ended rather than let
	// dispatch calls its first run never made.
	ErrorNondeterministic = "nondeterministic"
)
