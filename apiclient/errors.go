package apiclient

import (
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Sentinels an *Error matches with errors.Is, by status class or by the
// API's error code, so a caller can branch without parsing messages.
var (
	// ErrBadRequest matches a 400: malformed JSON, an unknown or invalid
	// field, an operation id that is not op-<n>.
	ErrBadRequest = errors.New("apiclient: bad request")
	// ErrUnauthorized matches a 401: the token is missing or unknown.
	ErrUnauthorized = errors.New("apiclient: unauthorized")
	// ErrForbidden matches a 403: the token is valid but may not do
	// this (ErrMissingScope, ErrToolNotPermitted).
	ErrForbidden = errors.New("apiclient: forbidden")
	// ErrMissingScope matches the 403 for a token without the scope the
	// endpoint needs; Error.Scope names it.
	ErrMissingScope = errors.New("apiclient: token lacks the scope")
	// ErrToolNotPermitted matches the 403 for a submission whose tools
	// go beyond its token's; Error.Tool names the pattern refused.
	ErrToolNotPermitted = errors.New("apiclient: tool not permitted for this token")
	// ErrNotFound matches every 404: no such endpoint, session or
	// operation.
	ErrNotFound = errors.New("apiclient: not found")
	// ErrUnknownSession matches the 404 for a session the host cannot
	// answer for (never existed, or its record expired).
	ErrUnknownSession = errors.New("apiclient: unknown session")
	// ErrUnknownOperation matches the 404 for an operation that is not
	// live (never existed, or already finished).
	ErrUnknownOperation = errors.New("apiclient: unknown operation")
	// ErrConflict matches a 409: a cancel already in progress, an
	// operation in a state that cannot be cancelled, a running script.
	ErrConflict = errors.New("apiclient: conflict")
	// ErrTooLarge matches a 413: the body or the script is over its limit.
	ErrTooLarge = errors.New("apiclient: too large")
	// ErrRejected matches a 422: a well-formed request the host refuses
	// (unknown tool, limit too high, capability denied, ...).
	ErrRejected = errors.New("apiclient: rejected")
	// ErrUnavailable matches a 501 or 503: the host is stopping, not
	// ready, short of memory, or serves no event streams.
	ErrUnavailable = errors.New("apiclient: unavailable")
	// ErrTooManyRequests matches every 429: the host holds all the
	// sessions it may (host_busy) or the token is over one of its
	// quotas (ErrQuota). Error.RetryAfter says when to try again.
	ErrTooManyRequests = errors.New("apiclient: too many requests")
	// ErrQuota matches the 429 of a token over one of its owner's quotas
	// (session_quota, submission_rate, token_stream_limit) or of a client
	// over its connections (client_connection_limit); Error.Code names
	// the quota.
	ErrQuota = errors.New("apiclient: over a quota")
	// ErrMemoryPressure matches the 503 of a host too short of memory to
	// take a new session (memory_pressure); it takes one again once its
	// sessions let memory go.
	ErrMemoryPressure = errors.New("apiclient: host short of memory")
	// ErrServer matches any other 5xx.
	ErrServer = errors.New("apiclient: server error")

	// ErrBadURL is returned by New for a base URL that is not an absolute
	// http or https URL.
	ErrBadURL = errors.New("apiclient: bad base url")
	// ErrUnreachable wraps a transport failure: the host could not be
	// reached or the connection broke before an answer.
	ErrUnreachable = errors.New("apiclient: host unreachable")
	// ErrBadResponse marks a 2xx answer whose body is not what the API
	// documents.
	ErrBadResponse = errors.New("apiclient: bad response")
	// ErrStreamEnded is returned by EventStream.Next when the stream ends
	// before the session's terminal state: the client lagged, or the host
	// shut down or dropped the connection. The session may still be
	// running; poll it with Client.Session.
	ErrStreamEnded = errors.New("apiclient: event stream ended before the session finished")
)

// Error is an error answer of the host API: its HTTP status and the code
// and message of the JSON error body. An answer without that body (a proxy
// in the way) has an empty Code and the start of the body as Message.
type Error struct {
	Status  int
	Code    string
	Message string
	// Scope is the scope a missing_scope refusal names; Tool the tool
	// pattern a tool_not_permitted refusal names.
	Scope string
	Tool  string
	// RetryAfter is the answer's Retry-After (a 429's or a 503's): how
	// long until the request may be taken. 0 without one.
	RetryAfter time.Duration
}

// Error puts the host's message first, since it names the problem, then
// the status and code a script or a bug report would quote.
func (e *Error) Error() string {
	code := e.Code
	if code == "" {
		code = http.StatusText(e.Status)
	}
	if e.Message == "" {
		return fmt.Sprintf("host answered %d %s", e.Status, code)
	}
	return fmt.Sprintf("%s (%d %s)", e.Message, e.Status, code)
}

// Is matches the sentinels of this package by status class or code.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrBadRequest:
		return e.Status == http.StatusBadRequest
	case ErrUnauthorized:
		return e.Status == http.StatusUnauthorized
	case ErrForbidden:
		return e.Status == http.StatusForbidden
	case ErrMissingScope:
		return e.Code == "missing_scope"
	case ErrToolNotPermitted:
		return e.Code == "tool_not_permitted"
	case ErrNotFound:
		return e.Status == http.StatusNotFound
	case ErrUnknownSession:
		return e.Code == "unknown_session"
	case ErrUnknownOperation:
		return e.Code == "unknown_operation"
	case ErrConflict:
		return e.Status == http.StatusConflict
	case ErrTooLarge:
		return e.Status == http.StatusRequestEntityTooLarge
	case ErrRejected:
		return e.Status == http.StatusUnprocessableEntity
	case ErrUnavailable:
		return e.Status == http.StatusServiceUnavailable || e.Status == http.StatusNotImplemented
	case ErrTooManyRequests:
		return e.Status == http.StatusTooManyRequests
	case ErrQuota:
		return e.Status == http.StatusTooManyRequests && quotaCodes[e.Code]
	case ErrMemoryPressure:
		return e.Code == "memory_pressure"
	case ErrServer:
		return e.Status >= 500 && e.Status != http.StatusServiceUnavailable && e.Status != http.StatusNotImplemented
	}
	return false
}

// quotaCodes are the codes of the 429s a quota gives.
var quotaCodes = map[string]bool{
	"session_quota": true, "submission_rate": true, "token_stream_limit": true, "client_connection_limit": true,
}
