package httpapi_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/hostloop"
	"github.com/splashfabric/splashfabric/httpapi"
	"github.com/splashfabric/splashfabric/httpapi/apiwire"
	"github.com/splashfabric/splashfabric/toolspec"
)

// consoleEnv is an API with a session index, a waiter and a tool source,
// over the fake backend.
type consoleEnv struct {
	*apiEnv
	index  *httpapi.SessionIndex
	waiter *fakeWaiter
	now    time.Time
}

type fakeWaiter struct {
	mu      sync.Mutex
	waiting map[string]bool
	err     error
}

func (f *fakeWaiter) Waiting(_ context.Context, ids []string) (map[string]bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	out := make(map[string]bool)
	for _, id := range ids {
		if f.waiting[id] {
			out[id] = true
		}
	}
	return out, nil
}

type fakeTools struct{ set *toolspec.Set }

func (f fakeTools) Catalog() *toolspec.Set { return f.set }

func (f fakeTools) Pool(_ context.Context, tool string) (apiwire.Pool, bool, error) {
	switch tool {
	case "echo":
		return apiwire.Pool{Pending: 3, AckPending: 2, Waiting: 1}, true, nil
	case "broken":
		return apiwire.Pool{}, false, errors.New("nats: timeout")
	}
	return apiwire.Pool{}, false, nil
}

func newConsoleEnv(t *testing.T) *consoleEnv {
	t.Helper()
	e := &consoleEnv{waiter: &fakeWaiter{waiting: map[string]bool{}}, now: t0}
	e.index = httpapi.NewSessionIndex(httpapi.IndexConfig{Sessions: 3, SourceBytes: 16, Now: func() time.Time { return e.now }})
	var tools []*toolspec.Tool
	for _, name := range []string{"echo", "idle", "broken"} {
		spec := toolspec.Spec{Name: name, Description: "the " + name + " tool",
			Redact: []toolspec.RedactRule{{Literal: "hidden-" + name, Replace: "x"}}}
		if name == "idle" {
			spec.Process = &toolspec.Process{Command: []string{"idle-tool"}, Contain: &toolspec.Contain{Disabled: true}}
		}
		tool, err := spec.Compile()
		if err != nil {
			t.Fatal(err)
		}
		tools = append(tools, tool)
	}
	set, err := toolspec.NewSet(tools...)
	if err != nil {
		t.Fatal(err)
	}
	b := httpapi.NewBroadcaster(httpapi.BroadcasterConfig{})
	fb := newFakeBackend(httpapi.Tee(b, e.index))
	srv := httptest.NewServer(httpapi.New(fb, httpapi.Config{
		Token: testToken, Events: b, Index: e.index, Waiting: e.waiter, Tools: fakeTools{set},
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(b.Close)
	e.apiEnv = &apiEnv{srv: srv, backend: fb, events: b}
	return e
}

func (e *consoleEnv) submit(t *testing.T, source string) string {
	t.Helper()
	resp := e.do(t, http.MethodPost, "/v1/sessions", testToken, fmt.Sprintf(`{"source":%q}`, source))
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("submit: %d", resp.StatusCode)
	}
	return decodeBody[apiwire.Session](t, resp).ID
}

func TestSessionListFiltersByStateNewestFirst(t *testing.T) {
	e := newConsoleEnv(t)
	for i := 1; i <= 4; i++ {
		e.submit(t, fmt.Sprintf("await tool.start('echo', '%d')", i))
	}
	e.backend.finish(sessionID(3), "done")
	tests := []struct {
		query    string
		want     []string
		wantCode string
	}{
		// The index keeps three: s-1 was let go.
		{query: "", want: []string{"s-4", "s-3", "s-2"}},
		{query: "?state=suspended", want: []string{"s-4", "s-2"}},
		{query: "?state=completed", want: []string{"s-3"}},
		{query: "?state=failed", want: []string{}},
		{query: "?state=suspended&limit=1", want: []string{"s-4"}},
		{query: "?state=running", wantCode: "invalid_field"},
		{query: "?limit=0", wantCode: "invalid_field"},
		{query: "?limit=x", wantCode: "invalid_field"},
		{query: "?sauce=1", wantCode: "invalid_field"},
		{query: "?state=failed&state=completed", wantCode: "invalid_field"},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			resp := e.do(t, http.MethodGet, "/v1/sessions"+tt.query, testToken, "")
			if tt.wantCode != "" {
				if got := decodeBody[errorResponse](t, resp); resp.StatusCode != http.StatusBadRequest || got.Error.Code != tt.wantCode {
					t.Fatalf("%d %+v, want 400 %s", resp.StatusCode, got, tt.wantCode)
				}
				return
			}
			list := decodeBody[apiwire.SessionList](t, resp)
			var got []string
			for _, s := range list.Sessions {
				got = append(got, s.ID)
			}
			if !slices.Equal(got, tt.want) && len(got)+len(tt.want) > 0 {
				t.Fatalf("sessions = %v, want %v", got, tt.want)
			}
		})
	}
	list := decodeBody[apiwire.SessionList](t, e.do(t, http.MethodGet, "/v1/sessions?state=completed", testToken, ""))
	s := list.Sessions[0]
	if s.Value == nil || *s.Value != "done" || !slices.Equal(s.Tools, []string{"echo"}) || s.Operations != 0 || !s.Updated.Equal(t0) {
		t.Fatalf("completed session = %+v", s)
	}
	// The loop reports a status after every step; one that changed
	// nothing listed does not move updated.
	e.now = t0.Add(time.Hour)
	e.index.SessionChanged(hostloop.SessionStatus{ID: "s-3", State: hostloop.SessionCompleted, Value: "done", Created: t0})
	if got := decodeBody[apiwire.SessionList](t, e.do(t, http.MethodGet, "/v1/sessions?state=completed", testToken, "")).Sessions[0]; !got.Updated.Equal(t0) {
		t.Fatalf("updated moved to %v on an unchanged status", got.Updated)
	}
	if resp := e.do(t, http.MethodGet, "/v1/sessions", "-", ""); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("without a token: %d", resp.StatusCode)
	}
}

func TestSessionSourceIsKeptCutAndRefusedForOthers(t *testing.T) {
	e := newConsoleEnv(t)
	short := e.submit(t, "return 1")
	long := e.submit(t, "return '<img src=x onerror=alert(1)>'")
	if got := decodeBody[apiwire.Source](t, e.do(t, http.MethodGet, "/v1/sessions/"+short+"/source", testToken, "")); got.Source != "return 1" || got.Truncated {
		t.Fatalf("short source = %+v", got)
	}
	if got := decodeBody[apiwire.Source](t, e.do(t, http.MethodGet, "/v1/sessions/"+long+"/source", testToken, "")); !strings.HasPrefix(got.Source, "return '<img src…") || !got.Truncated {
		t.Fatalf("long source = %+v", got)
	}
	// A session the loop knows but the index never saw submitted.
	e.backend.mu.Lock()
	e.backend.sessions["s-other"] = &fakeSession{status: hostloop.SessionStatus{ID: "s-other", State: hostloop.SessionCompleted}}
	e.backend.mu.Unlock()
	for path, want := range map[string]string{"s-other": "source_unavailable", "s-nope": "unknown_session"} {
		resp := e.do(t, http.MethodGet, "/v1/sessions/"+path+"/source", testToken, "")
		if got := decodeBody[errorResponse](t, resp); resp.StatusCode != http.StatusNotFound || got.Error.Code != want {
			t.Fatalf("%s: %d %+v, want 404 %s", path, resp.StatusCode, got, want)
		}
	}
}

func TestClaimedOperationStillInItsStreamIsQueued(t *testing.T) {
	e := newConsoleEnv(t)
	a := e.submit(t, "await tool.start('echo', 'a')")
	e.submit(t, "await tool.start('echo', 'b')")
	e.waiter.waiting["r-1"] = true
	states := func() map[string]string {
		out := map[string]string{}
		for _, o := range decodeBody[apiwire.OperationList](t, e.do(t, http.MethodGet, "/v1/operations", testToken, "")).Operations {
			out[o.RequestID] = o.State
		}
		return out
	}
	if got := states(); got["r-1"] != "queued" || got["r-2"] != "claimed" {
		t.Fatalf("states = %v, want r-1 queued, r-2 claimed", got)
	}
	if got := decodeBody[apiwire.Session](t, e.do(t, http.MethodGet, "/v1/sessions/"+a, testToken, "")); got.Operations[0].State != "queued" {
		t.Fatalf("session's operation = %+v, want queued", got.Operations[0])
	}
	// When the stream cannot be read, the runtime's state stands.
	e.waiter.mu.Lock()
	e.waiter.err = errors.New("nats: timeout")
	e.waiter.mu.Unlock()
	if got := states(); got["r-1"] != "claimed" {
		t.Fatalf("states with the stream unreadable = %v, want r-1 claimed", got)
	}
}

func TestToolsListDefinitionsPoolsAndWorkersSeen(t *testing.T) {
	e := newConsoleEnv(t)
	id := hostloop.SessionID(e.submit(t, "await tool.start('echo', 'a')"))
	op := hostloop.OperationStatus{Session: id, ID: 1, RequestID: "r-1", Tool: "echo", State: host.Claimed, Attempt: 1, Worker: "worker-a"}
	e.index.OperationChanged(id, op)
	e.now = t0.Add(time.Minute)
	op.Worker = "worker-b"
	e.index.OperationChanged(id, op) // a chunk
	op.State = host.Succeeded
	e.index.OperationChanged(id, op) // its answer

	list := decodeBody[apiwire.ToolList](t, e.do(t, http.MethodGet, "/v1/tools", testToken, ""))
	byName := map[string]apiwire.Tool{}
	for _, tool := range list.Tools {
		byName[tool.Name] = tool
	}
	echo := byName["echo"]
	if echo.Pool == nil || echo.Pool.Pending != 3 || echo.Pool.AckPending != 2 || echo.Pool.Waiting != 1 || echo.Description != "the echo tool" || echo.Digest == "" {
		t.Fatalf("echo = %+v", echo)
	}
	if len(echo.Workers) != 2 || echo.Workers[0].ID != "worker-b" || echo.Workers[1].ID != "worker-a" {
		t.Fatalf("echo's workers = %+v, want worker-b then worker-a", echo.Workers)
	}
	if idle := byName["idle"]; idle.Pool != nil || idle.PoolError != "" || len(idle.Workers) != 0 || !idle.Uncontained {
		t.Fatalf("idle = %+v", idle)
	}
	if echo.Uncontained {
		t.Fatal("echo, which runs in no process, is listed uncontained")
	}
	if broken := byName["broken"]; broken.Pool != nil || broken.PoolError == "" {
		t.Fatalf("broken = %+v", broken)
	}
	body := e.do(t, http.MethodGet, "/v1/tools", testToken, "")
	raw, err := io.ReadAll(body.Body)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), "hidden-") || strings.Contains(string(raw), "redact") || strings.Contains(string(raw), "process") || strings.Contains(string(raw), "idle-tool") {
		t.Fatalf("/v1/tools shows how a tool redacts or runs:\n%s", raw)
	}

	// Past the window, a worker is no longer listed.
	e.now = t0.Add(httpapi.DefaultWorkerSeenWindow + 30*time.Second)
	workers := decodeBody[apiwire.WorkerList](t, e.do(t, http.MethodGet, "/v1/workers", testToken, "")).Workers
	if len(workers) != 1 || workers[0].ID != "worker-b" || !slices.Equal(workers[0].Tools, []string{"echo"}) || workers[0].Answered != 1 {
		t.Fatalf("workers = %+v, want worker-b alone", workers)
	}
}

func TestConsoleEndpointsWithoutTheirPartsAreNotServed(t *testing.T) {
	e := newAPIEnv(t, nil)
	for _, path := range []string{"/v1/sessions", "/v1/sessions/s-1/source", "/v1/tools", "/v1/workers"} {
		resp := e.do(t, http.MethodGet, path, testToken, "")
		if got := decodeBody[errorResponse](t, resp); resp.StatusCode != http.StatusNotImplemented || got.Error.Code != "not_served" {
			t.Errorf("%s: %d %+v, want 501 not_served", path, resp.StatusCode, got)
		}
	}
}
