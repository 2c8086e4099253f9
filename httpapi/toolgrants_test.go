package httpapi_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/hostloop"
	"github.com/splashfabric/splashfabric/httpapi"
	"github.com/splashfabric/splashfabric/httpapi/apitoken"
	"github.com/splashfabric/splashfabric/httpapi/apiwire"
	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/workflow"
)

// A script's call outside its session's tools fails in the script, on a
// real loop, before it uses the session's budget: with a budget of one
// call, the refused call leaves it for the granted one.
func TestCallOutsideTheSessionsToolsIsRefusedBeforeBudget(t *testing.T) {
	e := newScopedEnv(t, tokenSet(t, scopedTokens))
	tests := []struct {
		name, token, body string
		wantState         string
		wantValue         string
		wantErrorCode     string
	}{
		{
			name:  "the submission's tools",
			token: "submit",
			body: `{"source":"let d = ''; try { await tool.start('stream', 'x') } catch (e) { d = e.message } return d + ' | ' + await tool.start('echo', 'ok')",` +
				`"tools":["echo"],"tool_call_budget":1,"wait_ms":10000}`,
			wantState: "completed",
			wantValue: `tool.start: host: tool not granted: "stream" is not among the session's tools ["echo"] | ok`,
		},
		{
			name:          "uncaught, the session fails with a code",
			token:         "submit",
			body:          `{"source":"await tool.start('stream', 'x')","tools":["echo"],"wait_ms":10000}`,
			wantState:     "failed",
			wantErrorCode: "tool_not_granted",
		},
		{
			name:          "no tools named: the token's",
			token:         "narrow",
			body:          `{"source":"await tool.start('stream', 'x')","wait_ms":10000}`,
			wantState:     "failed",
			wantErrorCode: "tool_not_granted",
		},
		{
			name:      "the token's tools allow the call",
			token:     "narrow",
			body:      `{"source":"await tool.start('echo', 'fine')","wait_ms":10000}`,
			wantState: "completed",
			wantValue: "fine",
		},
		{
			name:          "no tools at all",
			token:         "submit",
			body:          `{"source":"await tool.start('echo', 'x')","tools":[],"wait_ms":10000}`,
			wantState:     "failed",
			wantErrorCode: "tool_not_granted",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := e.do(t, http.MethodPost, "/v1/sessions", secretOf(tt.token), tt.body)
			if resp.StatusCode != http.StatusCreated {
				t.Fatalf("status %d: %s", resp.StatusCode, readAll(t, resp))
			}
			s := decodeBody[apiwire.Session](t, resp)
			if s.State != tt.wantState || s.ErrorCode != tt.wantErrorCode || (s.Value != nil && *s.Value != tt.wantValue) {
				t.Fatalf("session %+v (value %q), want %s %q %s", s, deref(s.Value), tt.wantState, tt.wantValue, tt.wantErrorCode)
			}
			audit := decodeBody[apiwire.AuditLog](t, e.do(t, http.MethodGet, "/v1/sessions/"+s.ID+"/audit", secretOf("admin"), ""))
			if len(audit.Events) == 0 {
				t.Fatal("no audit")
			}
			for _, ev := range audit.Events {
				if ev.Outcome == "started" && ev.Tool != "echo" {
					t.Fatalf("a refused call started: %+v", ev)
				}
			}
			if tt.wantErrorCode != "" && audit.Events[0].Outcome != "denied" {
				t.Fatalf("the refusal is not audited: %+v", audit.Events)
			}
		})
	}
}

// A submission may grant its session no tool its token may not use: it is
// refused whole, naming the pattern, and nothing runs.
func TestSubmissionToolsWithinTheTokens(t *testing.T) {
	e := newScopedEnv(t, tokenSet(t, scopedTokens))
	tests := []struct {
		name, token, tools string
		grants             string
		status             int
		code, tool         string
	}{
		{"within", "narrow", `["echo"]`, "", 201, "", ""},
		{"none", "narrow", `[]`, "", 201, "", ""},
		{"beyond", "narrow", `["echo","stream"]`, "", 403, "tool_not_permitted", "stream"},
		{"wider pattern", "narrow", `["*"]`, "", 403, "tool_not_permitted", "*"},
		{"every tool", "narrow", `[">"]`, "", 403, "tool_not_permitted", ">"},
		{"any for a token of every tool", "submit", `[">"]`, "", 201, "", ""},
		{"malformed", "submit", `["echo."]`, "", 422, "invalid_tool_pattern", ""},
		{"as long as a tool name may be", "submit", `["` + strings.Repeat("a", 128) + `"]`, "", 201, "", ""},
		{"longer", "submit", `["` + strings.Repeat("a", 129) + `"]`, "", 422, "invalid_tool_pattern", ""},
		{"unknown grant", "narrow", `["stream"]`, `["tool","tools"]`, 422, "unknown_grant", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := `{"source":"return 1","tools":` + tt.tools
			if tt.grants != "" {
				body += `,"grants":` + tt.grants
			}
			resp := e.do(t, http.MethodPost, "/v1/sessions", secretOf(tt.token), body+"}")
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.status, readAll(t, resp))
			}
			if tt.code == "" {
				return
			}
			got := decodeBody[scopedError](t, resp)
			if got.Error.Code != tt.code || got.Error.Tool != tt.tool {
				t.Fatalf("error %+v, want %s naming %q", got.Error, tt.code, tt.tool)
			}
		})
	}
	resp := e.do(t, http.MethodGet, "/v1/sessions", secretOf("narrow"), "")
	// narrow's owner, team, holds the four admitted.
	if l := decodeBody[apiwire.SessionList](t, resp).Sessions; len(l) != 4 {
		t.Fatalf("narrow's owner has sessions %+v, want the 4 admitted", l)
	}
}

// The token file is reread as it changes: a new token is served, a
// removed one refused, a changed scope applied, all without a restart.
func TestTokenFileIsReloaded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens.yaml")
	write := func(content string) {
		t.Helper()
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	entry := func(name, scopes string) string {
		return "  - {name: " + name + ", sha256: " + apitoken.DigestOf(secretOf(name)).String() + ", scopes: [" + scopes + "], tools: [\">\"]}\n"
	}
	write("tokens:\n" + entry("first", "submit, read"))
	reloaded := make(chan error, 16)
	f, err := apitoken.OpenFile(path, apitoken.FileConfig{Poll: time.Millisecond, OnReload: func(_ *apitoken.Set, err error) {
		select {
		case reloaded <- err:
		default:
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	e := newScopedEnv(t, f)
	status := func(token string) int {
		return e.do(t, http.MethodGet, "/v1/operations", secretOf(token), "").StatusCode
	}
	// waitFor waits, on the file's reloads, until token gets want.
	waitFor := func(token string, want int) {
		t.Helper()
		deadline := time.After(time.Minute)
		for status(token) != want {
			select {
			case err := <-reloaded:
				if err != nil {
					t.Fatalf("reload: %v", err)
				}
			case <-deadline:
				t.Fatalf("%s still gets %d, not %d, a minute after the file changed", token, status(token), want)
			}
		}
	}
	if got := status("first"); got != 200 {
		t.Fatalf("first: %d", got)
	}
	if got := status("second"); got != 401 {
		t.Fatalf("second before it is added: %d", got)
	}
	write("tokens:\n" + entry("first", "submit, read") + entry("second", "submit, read"))
	waitFor("second", 200)

	write("tokens:\n" + entry("first", "submit") + entry("second", "submit, read"))
	waitFor("first", 403)

	write("tokens:\n" + entry("second", "submit, read"))
	waitFor("first", 401)

	// A broken edit keeps the tokens that were.
	write("tokens:\n  - {name: second, sha256: nope}\n")
	select {
	case err := <-reloaded:
		for err == nil {
			err = <-reloaded
		}
	case <-time.After(time.Minute):
		t.Fatal("the broken file was not reported")
	}
	if got := status("second"); got != 200 {
		t.Fatalf("second after a broken edit: %d", got)
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// A durable session is held to its tools after a restart: the next process
// replays it from its ledger with the same patterns, refusing again what
// the first refused and whatever else lies outside them.
func TestResumedSessionKeepsItsTools(t *testing.T) {
	ledger := workflow.NewMemoryLog()
	tokens := tokenSet(t, scopedTokens)
	start := func() (*hostloop.Loop, *hostloop.MemTransport, *httptest.Server) {
		tr := hostloop.NewMemTransport(64)
		loop, err := hostloop.StartLoop(hostloop.LoopConfig{Transport: tr, HostID: "h1", Catalog: catalog(t), Ledger: ledger})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(httpapi.New(loop, httpapi.Config{Tokens: tokens}))
		return loop, tr, srv
	}
	loop, tr, srv := start()
	e := &apiEnv{srv: srv}
	resp := e.do(t, http.MethodPost, "/v1/sessions", secretOf("submit"), `{"restart":"resume","tools":["hold"],"source":`+
		`"let d = []; try { await tool.start('echo', 'a') } catch (e) { d.push(e.message) } `+
		`d.push(await tool.start('hold', 'x')); `+
		`try { await tool.start('stream', 'b') } catch (e) { d.push(e.message) } return d.join(' | ')"}`)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("submit: %d %s", resp.StatusCode, readAll(t, resp))
	}
	id := decodeBody[apiwire.Session](t, resp).ID
	first, ok := tr.Next(time.Minute)
	if !ok || first.Tool != "hold" {
		t.Fatalf("first process dispatched %+v", first)
	}
	srv.Close()
	loop.Stop()

	loop, tr, srv = start()
	defer func() { srv.Close(); loop.Stop() }()
	again, ok := tr.Next(time.Minute)
	if !ok || again.RequestID != first.RequestID {
		t.Fatalf("resumed process dispatched %+v, want %s again", again, first.RequestID)
	}
	tr.Succeed(again, "held")
	want := `tool.start: host: tool not granted: "echo" is not among the session's tools ["hold"] | held | ` +
		`tool.start: host: tool not granted: "stream" is not among the session's tools ["hold"]`
	var st hostloop.SessionStatus
	testwait.Until(t, 0, "the resumed session to end", func() bool {
		var err error
		st, _, err = loop.Status(t.Context(), hostloop.SessionID(id))
		return err == nil && st.State != hostloop.SessionSuspended
	})
	if st.State != hostloop.SessionCompleted || st.Value != want {
		t.Fatalf("resumed session ended %s with %q %s, want %q", st.State, st.Value, st.Error, want)
	}
	// This process did not submit it, yet its ledger named its owner:
	// admin and the owner's own tokens reach it, another owner's do not.
	e = &apiEnv{srv: srv}
	for _, tc := range []struct {
		token string
		want  int
	}{{"admin", http.StatusOK}, {"read", http.StatusOK}, {"other", http.StatusNotFound}} {
		if got := e.do(t, http.MethodGet, "/v1/sessions/"+id, secretOf(tc.token), "").StatusCode; got != tc.want {
			t.Fatalf("token %s reading the resumed session: %d, want %d", tc.token, got, tc.want)
		}
	}
}
