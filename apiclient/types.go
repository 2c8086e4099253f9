package apiclient

import "github.com/splashfabric/splashfabric/httpapi/apiwire"

// The wire types are the server's own (package apiwire), so the two sides
// cannot disagree on a field name; docs/api.md describes each.
type (
	// SubmitRequest is a script with its grants and limits.
	SubmitRequest = apiwire.SubmitRequest
	// Session is a session's state, result and live operations.
	Session = apiwire.Session
	// Operation is one live operation of a session.
	Operation = apiwire.Operation
	// AuditLog is a session's audit events, oldest first.
	AuditLog = apiwire.AuditLog
	// AuditEntry is one audit event.
	AuditEntry = apiwire.AuditEntry
	// Chunk is one released (redacted) piece of a streaming tool's output.
	Chunk = apiwire.Chunk
	// CancelResponse is the host's answer to a cancel: requested, not yet
	// done.
	CancelResponse = apiwire.CancelResponse
	// SessionCancelResponse is the session as a session cancel left it.
	SessionCancelResponse = apiwire.SessionCancelResponse
	// ReconcileResponse counts the operations a reconcile asks about.
	ReconcileResponse = apiwire.ReconcileResponse
	// SessionSummary is one line of the host's session list.
	SessionSummary = apiwire.SessionSummary
	// SessionList is the host's session list.
	SessionList = apiwire.SessionList
	// Source is the script a session was submitted with.
	Source = apiwire.Source
	// Tool is one tool of the host's catalog with its pool and workers.
	Tool = apiwire.Tool
	// ToolList is the host's catalog.
	ToolList = apiwire.ToolList
	// Pool is a tool's JetStream consumer, as the server counts it.
	Pool = apiwire.Pool
	// Worker is a worker the host heard from recently.
	Worker = apiwire.Worker
	// WorkerList is the workers the host heard from recently.
	WorkerList = apiwire.WorkerList
)

// Session states, as Session.State reports them.
const (
	StateSuspended = apiwire.StateSuspended
	StateCompleted = apiwire.StateCompleted
	StateFailed    = apiwire.StateFailed
	// StateCancelled: an operator ended the session.
	StateCancelled = apiwire.StateCancelled
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
