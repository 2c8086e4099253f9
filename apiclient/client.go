package apiclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/splashfabric/splashfabric/httpapi/apiwire"
	"github.com/splashfabric/splashfabric/internal/clip"
)

// maxResponseBytes bounds a JSON answer read into memory; the longest the
// API sends is a full audit log or operation list, far below it.
const maxResponseBytes = 32 << 20

// maxErrorBytes bounds what is kept of an error body that is not the
// API's JSON (an HTML page from a proxy), so the message stays one line.
const maxErrorBytes = 512

// Client calls one host's API. It is safe for concurrent use.
type Client struct {
	base  *url.URL
	token string
	http  *http.Client
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient makes the Client send its requests through hc, for its
// transport, proxy or TLS settings. hc's Timeout, if any, also cuts event
// streams short, so leave it zero and bound calls with their context.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) { c.http = hc }
}

// New returns a client of the API at baseURL ("http://127.0.0.1:8080"),
// sending token as its bearer token. An empty token sends none; the host
// then answers ErrUnauthorized.
func New(baseURL, token string, opts ...Option) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %v", ErrBadURL, baseURL, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: %q: want http://host:port or https://host:port", ErrBadURL, baseURL)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("%w: %q: a query or fragment has no place in a base url", ErrBadURL, baseURL)
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	c := &Client{base: u, token: token, http: http.DefaultClient}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// BaseURL returns the API's base URL as the client uses it.
func (c *Client) BaseURL() string { return c.base.String() }

// endpoint joins escaped path segments to the base URL, so an id with a
// slash cannot reach another endpoint.
func (c *Client) endpoint(segments ...string) string {
	var b strings.Builder
	b.WriteString(c.base.String())
	for _, s := range segments {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(s))
	}
	return b.String()
}

// newRequest builds an authenticated request; body, if not nil, is sent
// as JSON.
func (c *Client) newRequest(ctx context.Context, method, target string, body any) (*http.Request, error) {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("apiclient: encode request: %w", err)
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, r)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadURL, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	return req, nil
}

// send performs req and turns a non-2xx answer into an *Error; on success
// the caller owns the body.
func (c *Client) send(req *http.Request) (*http.Response, error) {
	resp, err := c.http.Do(req)
	if err != nil {
		if ctxErr := req.Context().Err(); ctxErr != nil {
			// The caller ended the call; that is not the host's fault.
			return nil, fmt.Errorf("apiclient: %s %s: %w", req.Method, req.URL.Path, ctxErr)
		}
		return nil, fmt.Errorf("%w: %w", ErrUnreachable, err)
	}
	if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		return resp, nil
	}
	defer resp.Body.Close()
	return nil, errorOf(resp)
}

// errorOf reads the API's JSON error body, or keeps the start of any
// other body as the message.
func errorOf(resp *http.Response) *Error {
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	var body apiwire.ErrorBody
	if json.Unmarshal(raw, &body) == nil && body.Error.Code != "" {
		e := body.Error
		return &Error{Status: resp.StatusCode, Code: e.Code, Message: e.Message, Scope: e.Scope, Tool: e.Tool, RetryAfter: retryAfter(resp)}
	}
	msg := strings.TrimSpace(string(raw))
	return &Error{Status: resp.StatusCode, Message: strings.Join(strings.Fields(clip.String(msg, maxErrorBytes)), " "), RetryAfter: retryAfter(resp)}
}

// retryAfter reads a response's Retry-After in seconds (the API sends
// no dates); 0 without one.
func retryAfter(resp *http.Response) time.Duration {
	n, err := strconv.Atoi(strings.TrimSpace(resp.Header.Get("Retry-After")))
	if err != nil || n < 0 {
		return 0
	}
	return time.Duration(n) * time.Second
}

// call sends a request and decodes the 2xx answer into out.
func (c *Client) call(ctx context.Context, method, target string, body, out any) error {
	req, err := c.newRequest(ctx, method, target, body)
	if err != nil {
		return err
	}
	resp, err := c.send(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return fmt.Errorf("apiclient: %s %s: %w", method, req.URL.Path, ctxErr)
		}
		return fmt.Errorf("%w: %w", ErrUnreachable, err)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("%w: %s %s: %v", ErrBadResponse, method, req.URL.Path, err)
	}
	return nil
}
