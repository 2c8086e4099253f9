package httpapi_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/splashfabric/splashfabric/metrics"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/splashfabric/splashfabric/hostloop"
	"github.com/splashfabric/splashfabric/httpapi"
	"github.com/splashfabric/splashfabric/httpapi/apitoken"
	"github.com/splashfabric/splashfabric/httpapi/apiwire"
	"github.com/splashfabric/splashfabric/toolspec"
)

// scopedTokens are the tokens of a scoped host; each one's secret is its
// name with "-secret". "none" to "metrics" hold one scope each (none
// holds none) and share the owner "team"; "other" holds every scope but
// admin under another owner; "narrow" may submit only the echo tool.
var scopedTokens = []apitoken.Spec{
	{Name: "none", Owner: "team"},
	{Name: "submit", Owner: "team", Scopes: []apitoken.Scope{apitoken.ScopeSubmit}, Tools: []string{">"}},
	{Name: "read", Owner: "team", Scopes: []apitoken.Scope{apitoken.ScopeRead}, Tools: []string{"echo", "stream"}},
	{Name: "cancel", Owner: "team", Scopes: []apitoken.Scope{apitoken.ScopeCancel}},
	{Name: "metrics", Owner: "team", Scopes: []apitoken.Scope{apitoken.ScopeMetrics}},
	{Name: "other", Scopes: []apitoken.Scope{apitoken.ScopeSubmit, apitoken.ScopeRead, apitoken.ScopeCancel}, Tools: []string{">"}},
	{Name: "admin", Scopes: []apitoken.Scope{apitoken.ScopeAdmin}, Tools: []string{}},
	{Name: "narrow", Owner: "team", Scopes: []apitoken.Scope{apitoken.ScopeSubmit, apitoken.ScopeRead}, Tools: []string{"echo"}},
}

func secretOf(name string) string { return name + "-secret" }

func tokenSet(t *testing.T, specs []apitoken.Spec) *apitoken.Set {
	t.Helper()
	var entries []apitoken.Entry
	for _, sp := range specs {
		tok, err := apitoken.New(sp)
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, apitoken.Entry{Digest: apitoken.DigestOf(secretOf(sp.Name)), Token: tok})
	}
	set, err := apitoken.NewSet(entries)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// newScopedEnv serves every endpoint the API has (metrics behind a token,
// the console, the index, tools, a stand-in MCP server that answers with
// the name of the token it was handed) over a real loop, to the
// scopedTokens.
func newScopedEnv(t *testing.T, tokens apitoken.Verifier) *apiEnv {
	t.Helper()
	events := httpapi.NewBroadcaster(httpapi.BroadcasterConfig{})
	index := httpapi.NewSessionIndex(httpapi.IndexConfig{})
	timelines := httpapi.NewTimelines(httpapi.TimelineConfig{})
	loop, err := hostloop.StartLoop(hostloop.LoopConfig{
		Transport: startMemWorker(t),
		HostID:    "h1",
		Catalog:   catalog(t),
		Observer:  httpapi.Tee(events, index, timelines),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(loop.Stop)
	var specs []*toolspec.Tool
	for _, name := range []string{"echo", "stream", "hold", "sleep"} {
		tool, err := toolspec.Spec{Name: name, Description: "the " + name + " tool"}.Compile()
		if err != nil {
			t.Fatal(err)
		}
		specs = append(specs, tool)
	}
	set, err := toolspec.NewSet(specs...)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(httpapi.New(loop, httpapi.Config{
		Tokens:    tokens,
		Events:    events,
		Index:     index,
		Timelines: timelines,
		Series:    metrics.NewSeries(metrics.SeriesConfig{Gatherer: prometheus.NewRegistry()}),
		Tools:     fakeTools{set},
		UI:        http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "<html>") }),
		Metrics: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, "splash_up 1\n")
		}),
		MCP: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			tok, ok := httpapi.MCPToken(auth.TokenInfoFromContext(r.Context()))
			if !ok {
				http.Error(w, "no token", http.StatusInternalServerError)
				return
			}
			_, _ = io.WriteString(w, tok.Name())
		}),
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(events.Close)
	return &apiEnv{srv: srv, events: events}
}

// heldSession submits, as token, a session that waits on an operation
// nobody answers, and returns its id and the operation's request id.
func heldSession(t *testing.T, e *apiEnv, token string) (id, request string) {
	t.Helper()
	resp := e.do(t, http.MethodPost, "/v1/sessions", secretOf(token), `{"source":"await tool.start(\"hold\", \"x\")"}`)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("submit as %s: %d %s", token, resp.StatusCode, readAll(t, resp))
	}
	s := decodeBody[apiwire.Session](t, resp)
	if len(s.Operations) != 1 {
		t.Fatalf("session %+v holds no operation", s)
	}
	return s.ID, s.Operations[0].RequestID
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

type scopedError struct {
	Error struct {
		Code  string `json:"code"`
		Scope string `json:"scope"`
		Tool  string `json:"tool"`
	} `json:"error"`
}

// Every endpoint refuses a token without its scope (403 missing_scope,
// naming the scope), a missing or unknown token (401), and a session of
// another owner (404, as if it did not exist); admin reaches everything.
func TestEveryEndpointEnforcesItsScope(t *testing.T) {
	e := newScopedEnv(t, tokenSet(t, scopedTokens))
	const (
		public = apitoken.Scope("")
		any    = apitoken.Scope("any")
	)
	endpoints := []struct {
		method, path, body string
		scope              apitoken.Scope
		ok                 int
		// ofSession: path names a session of "team" (%[1]s, its operation
		// %[2]s by request id), fresh for each call.
		ofSession bool
	}{
		{"GET", "/healthz", "", public, 200, false},
		{"GET", "/readyz", "", public, 200, false},
		{"GET", "/ui/", "", public, 200, false},
		{"GET", "/metrics", "", apitoken.ScopeMetrics, 200, false},
		{"POST", "/v1/sessions", `{"source":"return 1","tools":[]}`, apitoken.ScopeSubmit, 201, false},
		{"GET", "/v1/sessions", "", apitoken.ScopeRead, 200, false},
		{"GET", "/v1/sessions/%[1]s", "", apitoken.ScopeRead, 200, true},
		{"GET", "/v1/sessions/%[1]s/audit", "", apitoken.ScopeRead, 200, true},
		{"GET", "/v1/sessions/%[1]s/events", "", apitoken.ScopeRead, 200, true},
		{"GET", "/v1/sessions/%[1]s/source", "", apitoken.ScopeRead, 200, true},
		{"POST", "/v1/sessions/%[1]s/operations/op-1/cancel", "", apitoken.ScopeCancel, 202, true},
		{"GET", "/v1/operations", "", apitoken.ScopeRead, 200, false},
		// By request id: another owner's operation is not among those it
		// can name.
		{"POST", "/v1/operations/%[2]s/cancel", "", apitoken.ScopeCancel, 202, true},
		{"GET", "/v1/tools", "", apitoken.ScopeRead, 200, false},
		{"GET", "/v1/workers", "", apitoken.ScopeRead, 200, false},
		{"GET", "/v1/sessions/%[1]s/timeline", "", apitoken.ScopeRead, 200, true},
		{"GET", "/v1/metrics/tools", "", apitoken.ScopeRead, 200, false},
		{"POST", "/mcp", `{}`, apitoken.ScopeSubmit, 200, false},
		{"GET", "/no/such/endpoint", "", any, 404, false},
		{"DELETE", "/v1/sessions", "", any, 405, false},
	}
	callers := []string{"-", "wrong", "none", "submit", "read", "cancel", "metrics", "other", "admin"}
	for _, ep := range endpoints {
		for _, caller := range callers {
			t.Run(ep.method+" "+strings.ReplaceAll(ep.path, "/", "_")+" as "+caller, func(t *testing.T) {
				path := ep.path
				if ep.ofSession {
					id, request := heldSession(t, e, "submit")
					path = fmt.Sprintf(ep.path, id, request)
				}
				token := caller
				if caller != "-" {
					token = secretOf(caller)
				}
				resp := e.do(t, ep.method, path, token, ep.body)
				defer resp.Body.Close()
				want, wantCode := ep.ok, ""
				switch {
				case ep.scope == public:
				case caller == "-" || caller == "wrong":
					want = 401
				case ep.scope == any:
				case !slices.ContainsFunc(scopedTokens, func(sp apitoken.Spec) bool {
					return sp.Name == caller && (slices.Contains(sp.Scopes, ep.scope) || slices.Contains(sp.Scopes, apitoken.ScopeAdmin))
				}):
					want, wantCode = 403, "missing_scope"
				case ep.ofSession && caller == "other":
					want = 404
				}
				if resp.StatusCode != want {
					t.Fatalf("status %d, want %d: %s", resp.StatusCode, want, readAll(t, resp))
				}
				switch {
				case wantCode != "":
					body := decodeBody[scopedError](t, resp)
					if body.Error.Code != wantCode || body.Error.Scope != string(ep.scope) {
						t.Fatalf("error %+v, want %s naming %s", body.Error, wantCode, ep.scope)
					}
				case ep.path == "/mcp" && want == 200:
					if got := readAll(t, resp); got != caller {
						t.Fatalf("the MCP server was handed token %q", got)
					}
				}
			})
		}
	}
}

// Lists show a token the sessions, operations, tools and workers that
// are its own; admin sees them all.
func TestListsShowATokensOwn(t *testing.T) {
	e := newScopedEnv(t, tokenSet(t, scopedTokens))
	mine, _ := heldSession(t, e, "submit")
	theirs, _ := heldSession(t, e, "other")
	sessionsOf := func(caller string) []string {
		resp := e.do(t, "GET", "/v1/sessions", secretOf(caller), "")
		var ids []string
		for _, s := range decodeBody[apiwire.SessionList](t, resp).Sessions {
			ids = append(ids, s.ID)
		}
		slices.Sort(ids)
		return ids
	}
	operationsOf := func(caller string) []string {
		resp := e.do(t, "GET", "/v1/operations", secretOf(caller), "")
		var ids []string
		for _, o := range decodeBody[apiwire.OperationList](t, resp).Operations {
			ids = append(ids, o.Session)
		}
		slices.Sort(ids)
		return ids
	}
	toolsOf := func(caller string) []string {
		resp := e.do(t, "GET", "/v1/tools", secretOf(caller), "")
		var names []string
		for _, tool := range decodeBody[apiwire.ToolList](t, resp).Tools {
			names = append(names, tool.Name)
		}
		return names
	}
	both := []string{mine, theirs}
	slices.Sort(both)
	for _, tc := range []struct {
		caller   string
		sessions []string
		tools    []string
	}{
		{"read", []string{mine}, []string{"echo", "stream"}},
		{"narrow", []string{mine}, []string{"echo"}},
		{"other", []string{theirs}, []string{"echo", "hold", "sleep", "stream"}},
		{"admin", both, []string{"echo", "hold", "sleep", "stream"}},
	} {
		if got := sessionsOf(tc.caller); !slices.Equal(got, tc.sessions) {
			t.Errorf("%s lists sessions %q, want %q", tc.caller, got, tc.sessions)
		}
		if got := operationsOf(tc.caller); !slices.Equal(got, tc.sessions) {
			t.Errorf("%s lists operations of %q, want %q", tc.caller, got, tc.sessions)
		}
		if got := toolsOf(tc.caller); !slices.Equal(got, tc.tools) {
			t.Errorf("%s lists tools %q, want %q", tc.caller, got, tc.tools)
		}
	}
}
