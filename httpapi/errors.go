package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/hostloop"
	"github.com/splashfabric/splashfabric/httpapi/apitoken"
	"github.com/splashfabric/splashfabric/workflow"
)

// Errors the API itself raises. Each maps to one HTTP status and one
// stable code in the JSON error body; see codeFor.
var (
	// ErrMissingToken: no bearer token on an authenticated endpoint.
	ErrMissingToken = errors.New("httpapi: missing bearer token")
	// ErrInvalidToken: a bearer token that does not match.
	ErrInvalidToken = errors.New("httpapi: invalid bearer token")
	// ErrMissingScope: a token without the scope the endpoint needs.
	// Errors carrying it are *ScopeError values, which name the scope.
	ErrMissingScope = errors.New("httpapi: token lacks the scope")
	// ErrToolNotPermitted: a submission names tools beyond those its
	// token's sessions may use. Errors carrying it are *ToolError values,
	// which name the pattern.
	ErrToolNotPermitted = errors.New("httpapi: tool not permitted for this token")
	// ErrMalformedJSON: a body that is not one JSON object of the
	// expected shape.
	ErrMalformedJSON = errors.New("httpapi: malformed JSON")
	// ErrUnknownField: a body field the endpoint does not know.
	ErrUnknownField = errors.New("httpapi: unknown field")
	// ErrInvalidField: a field with a value out of its domain.
	ErrInvalidField = errors.New("httpapi: invalid field")
	// ErrUnsupportedMediaType: a body that is declared as something
	// other than JSON.
	ErrUnsupportedMediaType = errors.New("httpapi: unsupported media type")
	// ErrBodyTooLarge: a body over Config.MaxBodyBytes.
	ErrBodyTooLarge = errors.New("httpapi: request body too large")
	// ErrScriptTooLarge: a script source over Config.MaxSourceBytes.
	ErrScriptTooLarge = errors.New("httpapi: script too large")
	// ErrLimitTooHigh: a requested limit over what the server allows.
	ErrLimitTooHigh = errors.New("httpapi: limit above server maximum")
	// ErrInvalidOperationID: an operation path segment that names no
	// operation id.
	ErrInvalidOperationID = errors.New("httpapi: invalid operation id")
	// ErrNotFound: no endpoint at that path.
	ErrNotFound = errors.New("httpapi: no such endpoint")
	// ErrMethodNotAllowed: the path exists but not for that method.
	ErrMethodNotAllowed = errors.New("httpapi: method not allowed")
	// ErrNotReady: the readiness check failed.
	ErrNotReady = errors.New("httpapi: not ready")
	// ErrEventsUnavailable: the server was built without a Broadcaster.
	ErrEventsUnavailable = errors.New("httpapi: event streams not configured")
	// ErrNotServed: the endpoint needs a part this host was not given
	// (Config.Index, Config.Tools).
	ErrNotServed = errors.New("httpapi: not served by this host")
	// ErrSourceUnavailable: the host does not hold the session's source
	// (submitted to another process, or let go of).
	ErrSourceUnavailable = errors.New("httpapi: session source not held")
	// ErrDuplicateKey: a body object that names the same field twice
	// (encoding/json matches names case-insensitively, so "source" and
	// "Source" are the same field); which one would win is not the
	// client's to guess.
	ErrDuplicateKey = errors.New("httpapi: duplicate key")
	// ErrUnknownGrant: a grant that names no script capability.
	ErrUnknownGrant = errors.New("httpapi: unknown grant")
	// ErrRequestTimeout: the request body did not arrive within the
	// server's read timeout.
	ErrRequestTimeout = errors.New("httpapi: request body not received in time")
	// ErrConnectionLimit: the host serves as many connections as it
	// allows; the connection is answered and closed.
	ErrConnectionLimit = errors.New("httpapi: too many connections")
	// ErrStreamLimit: the host serves as many event streams as it allows.
	ErrStreamLimit = errors.New("httpapi: too many event streams")
	// ErrClientConnectionLimit: the client (its address) holds as many
	// connections as one client may; the connection is answered and
	// closed.
	ErrClientConnectionLimit = errors.New("httpapi: too many connections from this client")
	// ErrSubmissionRate: the token's owner submits faster than one owner
	// may (GateConfig.SubmitRate); the error carries when to try again
	// (a *QuotaError).
	ErrSubmissionRate = errors.New("httpapi: too many submissions for this token")
	// ErrTokenStreamLimit: the client's token holds as many event streams
	// as one token may.
	ErrTokenStreamLimit = errors.New("httpapi: too many event streams for this token")
)

// Codes of refusals that end a connection or a stream without an error
// body, reported to Config.OnRefused and ServerConfig.OnRefused beside the
// codes of the error table.
const (
	// CodeIdleTimeout: a keep-alive connection stayed idle past the
	// server's idle timeout and was closed.
	CodeIdleTimeout = "idle_timeout"
	// CodeSlowReader: an event stream's client stopped reading (a frame
	// could not be written within the stream write timeout, or the
	// stream fell behind its buffer) and was dropped.
	CodeSlowReader = "slow_reader"
)

// errorCode is one row of the error table: the sentinel, the status and
// the code clients match on. docs/api.md lists the same table.
type errorCode struct {
	err    error
	status int
	code   string
}

// errorCodes is checked in order with errors.Is; the first match wins, so
// more specific sentinels come first.
var errorCodes = []errorCode{
	{ErrMissingToken, http.StatusUnauthorized, "missing_token"},
	{ErrInvalidToken, http.StatusUnauthorized, "invalid_token"},
	{ErrMissingScope, http.StatusForbidden, "missing_scope"},
	{ErrToolNotPermitted, http.StatusForbidden, "tool_not_permitted"},
	{ErrMalformedJSON, http.StatusBadRequest, "malformed_json"},
	{ErrUnknownField, http.StatusBadRequest, "unknown_field"},
	{ErrDuplicateKey, http.StatusBadRequest, "duplicate_key"},
	{ErrInvalidField, http.StatusBadRequest, "invalid_field"},
	{ErrInvalidOperationID, http.StatusBadRequest, "invalid_operation_id"},
	{ErrRequestTimeout, http.StatusRequestTimeout, "request_timeout"},
	{ErrUnsupportedMediaType, http.StatusUnsupportedMediaType, "unsupported_media_type"},
	{ErrBodyTooLarge, http.StatusRequestEntityTooLarge, "body_too_large"},
	{ErrScriptTooLarge, http.StatusRequestEntityTooLarge, "script_too_large"},
	{ErrLimitTooHigh, http.StatusUnprocessableEntity, "limit_too_high"},
	{ErrUnknownGrant, http.StatusUnprocessableEntity, "unknown_grant"},
	{ErrTokenStreamLimit, http.StatusTooManyRequests, "token_stream_limit"},
	{ErrSubmissionRate, http.StatusTooManyRequests, "submission_rate"},
	{ErrClientConnectionLimit, http.StatusTooManyRequests, "client_connection_limit"},
	{ErrStreamLimit, http.StatusServiceUnavailable, "stream_limit"},
	{ErrConnectionLimit, http.StatusServiceUnavailable, "connection_limit"},
	{ErrNotFound, http.StatusNotFound, "not_found"},
	{ErrMethodNotAllowed, http.StatusMethodNotAllowed, "method_not_allowed"},
	{ErrNotReady, http.StatusServiceUnavailable, "not_ready"},
	{ErrEventsUnavailable, http.StatusNotImplemented, "events_unavailable"},
	{ErrNotServed, http.StatusNotImplemented, "not_served"},
	{ErrSourceUnavailable, http.StatusNotFound, "source_unavailable"},

	{hostloop.ErrUnknownSession, http.StatusNotFound, "unknown_session"},
	{hostloop.ErrSessionResuming, http.StatusServiceUnavailable, "session_resuming"},
	{hostloop.ErrSessionEnded, http.StatusConflict, "session_ended"},
	{hostloop.ErrSessionElsewhere, http.StatusMisdirectedRequest, "session_elsewhere"},
	{host.ErrUnknownOperation, http.StatusNotFound, "unknown_operation"},
	{host.ErrUnknownTool, http.StatusUnprocessableEntity, "unknown_tool"},
	{host.ErrInvalidToolName, http.StatusUnprocessableEntity, "invalid_tool_name"},
	{host.ErrNotExternal, http.StatusUnprocessableEntity, "not_external"},
	// Before capability_denied, which it matches too.
	{host.ErrToolNotGranted, http.StatusForbidden, "tool_not_granted"},
	{host.ErrCapabilityDenied, http.StatusUnprocessableEntity, "capability_denied"},
	{host.ErrInvalidToolPattern, http.StatusUnprocessableEntity, "invalid_tool_pattern"},
	{host.ErrBudgetExhausted, http.StatusUnprocessableEntity, "budget_exhausted"},
	{host.ErrPendingLimit, http.StatusUnprocessableEntity, "pending_limit"},
	{host.ErrExecutionBudget, http.StatusUnprocessableEntity, "execution_budget"},
	{host.ErrInvalidInput, http.StatusUnprocessableEntity, "invalid_input"},
	{host.ErrCancellationRequested, http.StatusConflict, "cancellation_already_requested"},
	{host.ErrWrongState, http.StatusConflict, "wrong_state"},
	{host.ErrNotClaimed, http.StatusConflict, "wrong_state"},
	{host.ErrScriptRunning, http.StatusConflict, "script_running"},
	{hostloop.ErrHostBusy, http.StatusTooManyRequests, "host_busy"},
	{hostloop.ErrOwnerBusy, http.StatusTooManyRequests, "session_quota"},
	{hostloop.ErrMemoryPressure, http.StatusServiceUnavailable, "memory_pressure"},
	{hostloop.ErrLimitTooHigh, http.StatusUnprocessableEntity, "limit_too_high"},
	{hostloop.ErrInvalidSubmission, http.StatusBadRequest, "invalid_field"},
	{hostloop.ErrLoopStopped, http.StatusServiceUnavailable, "unavailable"},
	// Before archive_unavailable, which wraps it: a record that fails
	// authentication is not served, and retrying will not mend it.
	{hostloop.ErrRecordRejected, http.StatusInternalServerError, "record_rejected"},
	{hostloop.ErrArchiveUnavailable, http.StatusServiceUnavailable, "archive_unavailable"},
	{hostloop.ErrLedgerUnavailable, http.StatusServiceUnavailable, "archive_unavailable"},
	{context.DeadlineExceeded, http.StatusServiceUnavailable, "timeout"},
	{context.Canceled, http.StatusServiceUnavailable, "canceled"},
}

// sessionErrorCodes name the reasons a session may fail with that a client
// can act on without parsing the message: the session was lost with the
// host process that held it. docs/api.md lists them.
var sessionErrorCodes = []struct {
	err  error
	code string
}{
	{hostloop.ErrHostRestarted, "host_restarted"},
	{hostloop.ErrHostStopped, "host_stopped"},
	// Its submitter left before the session was stored, and was told so.
	{hostloop.ErrSubmissionWithdrawn, "submission_withdrawn"},
	{hostloop.ErrValueTooLarge, "value_too_large"},
	// A resumed script that did not repeat the calls its ledger holds.
	{host.ErrNondeterministic, "nondeterministic"},
	// A script that called a tool outside its session's tools.
	{host.ErrToolNotGranted, "tool_not_granted"},
	// A script over one of its session's budgets.
	{host.ErrMemoryBudget, "memory_budget"},
	{host.ErrExecutionBudget, "execution_budget"},
	{host.ErrPendingLimit, "pending_limit"},
	// A tool input longer than its way to a worker carries.
	{host.ErrInputTooLarge, "input_too_large"},
	// Its ledger did not verify or replay after a restart (a damaged or
	// forged record, one sealed under a key no longer held).
	{hostloop.ErrLedgerRejected, "ledger_rejected"},
	// An operator ended it, or it outlived the lifetime it was given.
	{workflow.ErrSessionCancelled, "cancelled"},
	{workflow.ErrMaxLifetime, "max_lifetime"},
}

// QuotaError refuses a request over one of its token's quotas, and says
// when one will be within it again. It matches its quota's sentinel
// (ErrSubmissionRate, ...).
type QuotaError struct {
	// Err is the quota's sentinel; Detail says what the quota is.
	Err    error
	Detail string
	// After is how long until a request would be taken.
	After time.Duration
}

func (e *QuotaError) Error() string { return fmt.Sprintf("%v: %s", e.Err, e.Detail) }

// Unwrap returns the quota's sentinel.
func (e *QuotaError) Unwrap() error { return e.Err }

// RetryAfter is how long until a request would be taken: the response's
// Retry-After.
func (e *QuotaError) RetryAfter() time.Duration { return e.After }

// ScopeError refuses a request whose token lacks a scope. It matches
// ErrMissingScope.
type ScopeError struct {
	// Token is the token's name; Scope the scope it lacks.
	Token string
	Scope apitoken.Scope
}

func (e *ScopeError) Error() string {
	return fmt.Sprintf("%v: token %q lacks scope %q", ErrMissingScope, e.Token, e.Scope)
}

// Is matches ErrMissingScope.
func (e *ScopeError) Is(target error) bool { return target == ErrMissingScope }

// ToolError refuses a submission that names a tool pattern its token's
// sessions may not use. It matches ErrToolNotPermitted.
type ToolError struct {
	// Token is the token's name, Pattern the refused tool pattern and
	// Allowed the token's own patterns.
	Token   string
	Pattern string
	Allowed []string
}

func (e *ToolError) Error() string {
	return fmt.Sprintf("%v: token %q may not grant %q (its tools: %q)", ErrToolNotPermitted, e.Token, e.Pattern, e.Allowed)
}

// Is matches ErrToolNotPermitted.
func (e *ToolError) Is(target error) bool { return target == ErrToolNotPermitted }

// sessionErrorCode returns the code of a failed session's reason, or "".
func sessionErrorCode(err error) string {
	if err == nil {
		return ""
	}
	for _, c := range sessionErrorCodes {
		if errors.Is(err, c.err) {
			return c.code
		}
	}
	return ""
}

// Codes returns every code Config.OnRefused and ServerConfig.OnRefused
// may report: the closed set a metric labelled by code may take, so no
// client can grow it.
func Codes() []string {
	seen := map[string]bool{"internal": true}
	out := []string{"internal"}
	add := func(c string) {
		if !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	for _, c := range errorCodes {
		add(c.code)
	}
	add(CodeIdleTimeout)
	add(CodeSlowReader)
	return out
}

// codeFor returns the status and code for err; anything unmapped is an
// internal error.
func codeFor(err error) (int, string) {
	for _, c := range errorCodes {
		if errors.Is(err, c.err) {
			return c.status, c.code
		}
	}
	return http.StatusInternalServerError, "internal"
}
