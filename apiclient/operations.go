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
