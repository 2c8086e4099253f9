package apiclient

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
)

// Sessions lists the host's recent sessions, newest first: of state only,
// unless it is empty, and at most limit of them (0 takes the host's
// default of 100).
func (c *Client) Sessions(ctx context.Context, state string, limit int) ([]SessionSummary, error) {
	q := url.Values{}
	if state != "" {
		q.Set("state", state)
	}
	if limit != 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	target := c.endpoint("v1", "sessions")
	if len(q) > 0 {
		target += "?" + q.Encode()
	}
	var l SessionList
	err := c.call(ctx, http.MethodGet, target, nil, &l)
	return l.Sessions, err
}

// Source returns the script a session was submitted with.
func (c *Client) Source(ctx context.Context, id string) (Source, error) {
	var s Source
	err := c.call(ctx, http.MethodGet, c.endpoint("v1", "sessions", id, "source"), nil, &s)
	return s, err
}

// Tools lists the host's catalog, each tool with its worker pool's
// consumer and the workers seen serving it.
func (c *Client) Tools(ctx context.Context) ([]Tool, error) {
	var l ToolList
	err := c.call(ctx, http.MethodGet, c.endpoint("v1", "tools"), nil, &l)
	return l.Tools, err
}

// Workers lists the workers that sent the host a frame recently.
func (c *Client) Workers(ctx context.Context) ([]Worker, error) {
	var l WorkerList
	err := c.call(ctx, http.MethodGet, c.endpoint("v1", "workers"), nil, &l)
	return l.Workers, err
}
