package apiclient

import (
	"context"
	"net/http"
)

// Operations lists every live operation of every session on the host,
// oldest first.
func (c *Client) Operations(ctx context.Context) ([]Operation, error) {
	var l struct {
		Operations []Operation `json:"operations"`
	}
	if err := c.call(ctx, http.MethodGet, c.endpoint("v1", "operations"), nil, &l); err != nil {
		return nil, err
	}
	return l.Operations, nil
}

// Cancel asks the host to cancel operation op ("op-3" or "3") of a
// session. The answer means the worker was asked; the operation ends when
// it acknowledges or a result wins the race.
func (c *Client) Cancel(ctx context.Context, session, op string) (CancelResponse, error) {
	var r CancelResponse
	err := c.call(ctx, http.MethodPost, c.endpoint("v1", "sessions", session, "operations", op, "cancel"), nil, &r)
	return r, err
}

// CancelByRequest cancels the operation with a host-wide request id, as
// Operations lists it, for a caller that holds no session id.
func (c *Client) CancelByRequest(ctx context.Context, requestID string) (CancelResponse, error) {
	var r CancelResponse
	err := c.call(ctx, http.MethodPost, c.endpoint("v1", "operations", requestID, "cancel"), nil, &r)
	return r, err
}

// CancelSession ends a session: its live operations are cancelled
// two-phase and it ends cancelled once they settle. With force the host
// asserts them cancelled at once, without their workers.
func (c *Client) CancelSession(ctx context.Context, session string, force bool) (SessionCancelResponse, error) {
	var r SessionCancelResponse
	target := c.endpoint("v1", "sessions", session, "cancel")
	if force {
		target += "?force=true"
	}
	err := c.call(ctx, http.MethodPost, target, nil, &r)
	return r, err
}

// ReconcileSession asks the host to ask the workers, now, about every
// live operation of a session; it answers how many it asks about.
func (c *Client) ReconcileSession(ctx context.Context, session string) (ReconcileResponse, error) {
	var r ReconcileResponse
	err := c.call(ctx, http.MethodPost, c.endpoint("v1", "sessions", session, "reconcile"), nil, &r)
	return r, err
}
