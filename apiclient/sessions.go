package apiclient

import (
	"context"
	"net/http"
)

// Submit sends a script to the host, which runs it until it first waits or
// ends and answers with the new session. A script that fails while it runs
// is not an error here: the session's State is StateFailed.
func (c *Client) Submit(ctx context.Context, req SubmitRequest) (Session, error) {
	var s Session
	err := c.call(ctx, http.MethodPost, c.endpoint("v1", "sessions"), req, &s)
	return s, err
}

// Session returns a session's state, result and live operations.
func (c *Client) Session(ctx context.Context, id string) (Session, error) {
	var s Session
	err := c.call(ctx, http.MethodGet, c.endpoint("v1", "sessions", id), nil, &s)
	return s, err
}

// Audit returns a session's audit log so far, oldest first.
func (c *Client) Audit(ctx context.Context, id string) (AuditLog, error) {
	var l AuditLog
	err := c.call(ctx, http.MethodGet, c.endpoint("v1", "sessions", id, "audit"), nil, &l)
	return l, err
}
