package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/splashfabric/splashfabric/httpapi"
	"github.com/splashfabric/splashfabric/httpapi/apiwire"
)

const testToken = "s3cret-token"

type apiEnv struct {
	srv     *httptest.Server
	backend *fakeBackend
	events  *httpapi.Broadcaster
}

func newAPIEnv(t *testing.T, mutate func(*httpapi.Config)) *apiEnv {
	t.Helper()
	b := httpapi.NewBroadcaster(httpapi.BroadcasterConfig{})
	fb := newFakeBackend(b)
	cfg := httpapi.Config{
		Token:          testToken,
		Events:         b,
		MaxBodyBytes:   4 << 10,
		MaxSourceBytes: 1 << 10,
		Metrics: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, "splash_up 1\n")
		}),
	}
	if mutate != nil {
		mutate(&cfg)
	}
	srv := httptest.NewServer(httpapi.New(fb, cfg))
	t.Cleanup(srv.Close)
	t.Cleanup(b.Close)
	return &apiEnv{srv: srv, backend: fb, events: b}
}

// do sends a request with the test token unless token is "-" (none).
func (e *apiEnv) do(t *testing.T, method, path, token, body string) *http.Response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(context.Background(), method, e.srv.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if token != "-" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

type errorResponse struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func decodeBody[T any](t *testing.T, resp *http.Response) T {
	t.Helper()
	var v T
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("body %q: %v", b, err)
	}
	return v
}

func TestErrors(t *testing.T) {
	e := newAPIEnv(t, nil)
	sub := e.do(t, http.MethodPost, "/v1/sessions", testToken, `{"source":"await tool.start('echo','x')"}`)
	if sub.StatusCode != http.StatusCreated {
		t.Fatalf("submit status %d", sub.StatusCode)
	}
	// A second cancel of the same operation is a state conflict.
	if r := e.do(t, http.MethodPost, "/v1/sessions/s-1/operations/op-1/cancel", testToken, ""); r.StatusCode != http.StatusAccepted {
		t.Fatalf("first cancel %d", r.StatusCode)
	}
	bigSource := `{"source":"` + strings.Repeat("x", 2<<10) + `"}`
	bigBody := `{"source":"1","grants":["` + strings.Repeat("g", 8<<10) + `"]}`
	tests := []struct {
		name       string
		method     string
		path       string
		token      string
		body       string
		wantStatus int
		wantCode   string
		wantIn     string
	}{
		{"no token", "GET", "/v1/operations", "-", "", 401, "missing_token", "missing bearer token"},
		{"wrong token", "GET", "/v1/operations", "nope", "", 401, "invalid_token", "invalid bearer token"},
		{"token prefix", "GET", "/v1/operations", testToken[:4], "", 401, "invalid_token", ""},
		{"no token on unknown path", "GET", "/v2/nothing", "-", "", 401, "missing_token", ""},
		{"no token on metrics", "GET", "/metrics", "-", "", 401, "missing_token", ""},
		{"unknown path", "GET", "/v2/nothing", testToken, "", 404, "not_found", "/v2/nothing"},
		{"wrong method", "DELETE", "/v1/sessions", testToken, "", 405, "method_not_allowed", "POST"},
		{"malformed JSON", "POST", "/v1/sessions", testToken, `{"source":`, 400, "malformed_json", "ends inside"},
		{"syntax error", "POST", "/v1/sessions", testToken, `{"source" "x"}`, 400, "malformed_json", "at byte"},
		{"not an object", "POST", "/v1/sessions", testToken, `["x"]`, 400, "malformed_json", "want an object"},
		{"wrong type", "POST", "/v1/sessions", testToken, `{"source":1}`, 400, "malformed_json", `field "source"`},
		{"trailing data", "POST", "/v1/sessions", testToken, `{"source":"1"} {}`, 400, "malformed_json", "after the JSON object"},
		{"unknown field", "POST", "/v1/sessions", testToken, `{"source":"1","sauce":2}`, 400, "unknown_field", `"sauce"`},
		{"missing source", "POST", "/v1/sessions", testToken, `{"grants":["tool"]}`, 400, "invalid_field", "source is required"},
		{"negative budget", "POST", "/v1/sessions", testToken, `{"source":"1","tool_call_budget":-1}`, 400, "invalid_field", "tool_call_budget"},
		{"empty grant", "POST", "/v1/sessions", testToken, `{"source":"1","grants":[""]}`, 400, "invalid_field", "grants[0]"},
		{"budget over maximum", "POST", "/v1/sessions", testToken, `{"source":"1","execution_budget_ms":60000}`, 422, "limit_too_high", "maximum is 10000"},
		{"script too large", "POST", "/v1/sessions", testToken, bigSource, 413, "script_too_large", "limit is 1024"},
		{"body too large", "POST", "/v1/sessions", testToken, bigBody, 413, "body_too_large", "limit is 4096"},
		{"unknown tool", "POST", "/v1/sessions", testToken, `{"source":"unknown()"}`, 422, "unknown_tool", "unknown tool"},
		{"unknown session", "GET", "/v1/sessions/s-99", testToken, "", 404, "unknown_session", `"s-99"`},
		{"unknown session audit", "GET", "/v1/sessions/s-99/audit", testToken, "", 404, "unknown_session", ""},
		{"unknown session events", "GET", "/v1/sessions/s-99/events", testToken, "", 404, "unknown_session", ""},
		{"unknown session cancel", "POST", "/v1/sessions/s-99/operations/op-1/cancel", testToken, "", 404, "unknown_session", ""},
		{"unknown operation", "POST", "/v1/sessions/s-1/operations/op-9/cancel", testToken, "", 404, "unknown_operation", "op-9"},
		{"bad operation id", "POST", "/v1/sessions/s-1/operations/x9/cancel", testToken, "", 400, "invalid_operation_id", `"x9"`},
		{"cancel twice", "POST", "/v1/sessions/s-1/operations/op-1/cancel", testToken, "", 409, "cancellation_already_requested", ""},
		{"unknown request cancel", "POST", "/v1/operations/r-404/cancel", testToken, "", 404, "unknown_operation", "r-404"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := e.do(t, tt.method, tt.path, tt.token, tt.body)
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.wantStatus)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Fatalf("content type %q", ct)
			}
			got := decodeBody[errorResponse](t, resp)
			if got.Error.Code != tt.wantCode || !strings.Contains(got.Error.Message, tt.wantIn) {
				t.Fatalf("error %+v, want code %q with %q", got.Error, tt.wantCode, tt.wantIn)
			}
			if tt.wantStatus == 401 && resp.Header.Get("WWW-Authenticate") == "" {
				t.Fatal("401 without WWW-Authenticate")
			}
		})
	}
}

func TestUnsupportedMediaType(t *testing.T) {
	e := newAPIEnv(t, nil)
	req, err := http.NewRequest(http.MethodPost, e.srv.URL+"/v1/sessions", strings.NewReader(`{"source":"1"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "text/plain")
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if got := decodeBody[errorResponse](t, resp); resp.StatusCode != 415 || got.Error.Code != "unsupported_media_type" {
		t.Fatalf("status %d error %+v", resp.StatusCode, got.Error)
	}
}

func TestEmptyTokenFailsClosed(t *testing.T) {
	e := newAPIEnv(t, func(c *httpapi.Config) { c.Token = "" })
	for _, tok := range []string{"-", "", "anything"} {
		if r := e.do(t, "GET", "/v1/operations", tok, ""); r.StatusCode != 401 {
			t.Fatalf("token %q: status %d", tok, r.StatusCode)
		}
	}
}

func TestAuthFailuresAreReported(t *testing.T) {
	var (
		mu      sync.Mutex
		reasons []string
	)
	e := newAPIEnv(t, func(c *httpapi.Config) {
		c.OnAuthFailure = func(r string) { mu.Lock(); reasons = append(reasons, r); mu.Unlock() }
	})
	e.do(t, "GET", "/v1/operations", "-", "")
	e.do(t, "GET", "/v1/operations", "bad", "")
	e.do(t, "GET", "/v1/operations", testToken, "")
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(reasons, ",") != "missing_token,invalid_token" {
		t.Fatalf("reasons %v", reasons)
	}
}

func TestSubmitAndQuery(t *testing.T) {
	e := newAPIEnv(t, nil)
	resp := e.do(t, http.MethodPost, "/v1/sessions", testToken,
		`{"source":"await tool.start('echo','x')","grants":["tool"],"tool_call_budget":3,"max_pending":2,"execution_budget_ms":250}`)
	if resp.StatusCode != http.StatusCreated || resp.Header.Get("Location") != "/v1/sessions/s-1" {
		t.Fatalf("status %d location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	created := decodeBody[apiwire.Session](t, resp)
	if created.ID != "s-1" || created.State != "suspended" || len(created.Operations) != 1 || created.Operations[0].Tool != "echo" {
		t.Fatalf("created %+v", created)
	}
	sub := e.backend.subs[0]
	if sub.ToolCallBudget != 3 || sub.MaxPending != 2 || sub.ExecutionBudget.Milliseconds() != 250 || len(sub.Grants) != 1 {
		t.Fatalf("submission %+v", sub)
	}

	got := decodeBody[apiwire.Session](t, e.do(t, "GET", "/v1/sessions/s-1", testToken, ""))
	if got.ID != "s-1" || got.Value != nil {
		t.Fatalf("session %+v", got)
	}
	ops := decodeBody[apiwire.OperationList](t, e.do(t, "GET", "/v1/operations", testToken, ""))
	if len(ops.Operations) != 1 || ops.Operations[0].ID != "op-1" || ops.Operations[0].Session != "s-1" {
		t.Fatalf("operations %+v", ops)
	}
	audit := decodeBody[apiwire.AuditLog](t, e.do(t, "GET", "/v1/sessions/s-1/audit", testToken, ""))
	if audit.Session != "s-1" || len(audit.Events) != 1 || audit.Events[0].Outcome != "started" || audit.Events[0].Operation != "op-1" {
		t.Fatalf("audit %+v", audit)
	}

	e.backend.finish("s-1", "done")
	got = decodeBody[apiwire.Session](t, e.do(t, "GET", "/v1/sessions/s-1", testToken, ""))
	if got.State != "completed" || got.Value == nil || *got.Value != "done" || !got.Terminal() {
		t.Fatalf("finished %+v", got)
	}
}

func TestSubmitKeepsGrantsAsSent(t *testing.T) {
	e := newAPIEnv(t, nil)
	e.do(t, http.MethodPost, "/v1/sessions", testToken, `{"source":"1"}`)
	e.do(t, http.MethodPost, "/v1/sessions", testToken, `{"source":"1","grants":[]}`)
	if e.backend.subs[0].Grants != nil {
		t.Fatalf("absent grants became %#v", e.backend.subs[0].Grants)
	}
	if g := e.backend.subs[1].Grants; g == nil || len(g) != 0 {
		t.Fatalf("empty grants became %#v", g)
	}
}

func TestCancelByRequestID(t *testing.T) {
	e := newAPIEnv(t, nil)
	e.do(t, http.MethodPost, "/v1/sessions", testToken, `{"source":"1"}`)
	resp := e.do(t, http.MethodPost, "/v1/operations/r-1/cancel", testToken, "")
	got := decodeBody[apiwire.CancelResponse](t, resp)
	if resp.StatusCode != http.StatusAccepted || got != (apiwire.CancelResponse{Session: "s-1", Operation: "op-1", Cancellation: "requested"}) {
		t.Fatalf("status %d body %+v", resp.StatusCode, got)
	}
}

func TestProbes(t *testing.T) {
	notReady := errors.New("nats: not connected")
	var readyErr atomic.Pointer[error]
	e := newAPIEnv(t, func(c *httpapi.Config) {
		c.Ready = func(context.Context) error { return *readyErr.Load() }
		c.PublicMetrics = true
	})
	tests := []struct {
		name       string
		path       string
		ready      error
		wantStatus int
		wantIn     string
	}{
		{"healthz", "/healthz", notReady, 200, `"ok"`},
		{"ready", "/readyz", nil, 200, `"ready"`},
		{"not ready", "/readyz", notReady, 503, "not connected"},
		{"public metrics", "/metrics", nil, 200, "splash_up 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			readyErr.Store(&tt.ready)
			resp := e.do(t, "GET", tt.path, "-", "")
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.wantStatus || !bytes.Contains(b, []byte(tt.wantIn)) {
				t.Fatalf("status %d body %s", resp.StatusCode, b)
			}
		})
	}
}

func TestDisableAuth(t *testing.T) {
	e := newAPIEnv(t, func(c *httpapi.Config) { c.Token, c.DisableAuth = "", true })
	if r := e.do(t, "GET", "/v1/operations", "-", ""); r.StatusCode != 200 {
		t.Fatalf("status %d", r.StatusCode)
	}
}

func TestEventsWithoutBroadcaster(t *testing.T) {
	e := newAPIEnv(t, func(c *httpapi.Config) { c.Events = nil })
	e.do(t, http.MethodPost, "/v1/sessions", testToken, `{"source":"1"}`)
	resp := e.do(t, "GET", "/v1/sessions/s-1/events", testToken, "")
	if got := decodeBody[errorResponse](t, resp); resp.StatusCode != 501 || got.Error.Code != "events_unavailable" {
		t.Fatalf("status %d error %+v", resp.StatusCode, got)
	}
}

// TestSubmitWaitsForTheEnd: wait_ms holds the answer until the session
// ends, or answers with the session as it stands once the wait ran out;
// a wait the server does not allow is refused before anything runs.
func TestSubmitWaitsForTheEnd(t *testing.T) {
	tests := []struct {
		name, body string
		finish     bool
		status     int
		want       string // the answer's state, or its error code
	}{
		{"ends within the wait", `{"source":"x","wait_ms":10000}`, true, http.StatusCreated, "completed"},
		{"the wait runs out", `{"source":"x","wait_ms":50}`, false, http.StatusCreated, "suspended"},
		{"no wait", `{"source":"x"}`, false, http.StatusCreated, "suspended"},
		{"negative", `{"source":"x","wait_ms":-1}`, false, http.StatusBadRequest, "invalid_field"},
		{"over the maximum", `{"source":"x","wait_ms":15001}`, false, http.StatusUnprocessableEntity, "limit_too_high"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newAPIEnv(t, nil)
			if tt.finish {
				// The submit's first event says the session exists;
				// it ends then, while the answer waits.
				events, cancel := e.events.Subscribe("s-1")
				answered := make(chan struct{})
				var wg sync.WaitGroup
				defer func() { close(answered); wg.Wait(); cancel() }()
				wg.Go(func() {
					select {
					case <-events:
						e.backend.finish("s-1", "done")
					case <-answered:
					}
				})
			}
			resp := e.do(t, http.MethodPost, "/v1/sessions", testToken, tt.body)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.status)
			}
			if tt.status != http.StatusCreated {
				if got := decodeBody[errorResponse](t, resp); got.Error.Code != tt.want {
					t.Fatalf("error %+v, want %s", got, tt.want)
				}
				if len(e.backend.subs) != 0 {
					t.Fatal("a refused wait submitted the script")
				}
				return
			}
			if got := decodeBody[apiwire.Session](t, resp); got.State != tt.want {
				t.Fatalf("answer %+v, want state %s", got, tt.want)
			}
		})
	}
}
