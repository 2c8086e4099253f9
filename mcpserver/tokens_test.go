package mcpserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/splashfabric/splashfabric/apiclient"
	"github.com/splashfabric/splashfabric/httpapi"
	"github.com/splashfabric/splashfabric/httpapi/apitoken"
	"github.com/splashfabric/splashfabric/mcpserver"
)

// The tokens of a scoped host: "narrow" may run t.echo only, "full" any
// tool, "reader" nothing but read.
var mcpTokens = []apitoken.Spec{
	{Name: "narrow", Scopes: []apitoken.Scope{apitoken.ScopeSubmit, apitoken.ScopeRead}, Tools: []string{"t.echo"}},
	{Name: "full", Scopes: []apitoken.Scope{apitoken.ScopeSubmit, apitoken.ScopeRead}, Tools: []string{">"}},
	{Name: "reader", Scopes: []apitoken.Scope{apitoken.ScopeRead}},
}

func secret(name string) string { return name + "-secret" }

// scopedAPI serves the API over the fixture's loop to mcpTokens, with an
// MCP server at /mcp whose runner admits calls through the API's gate.
func (f *fixture) scopedAPI(t *testing.T) *httptest.Server {
	t.Helper()
	var entries []apitoken.Entry
	for _, sp := range mcpTokens {
		tok, err := apitoken.New(sp)
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, apitoken.Entry{Digest: apitoken.DigestOf(secret(sp.Name)), Token: tok})
	}
	set, err := apitoken.NewSet(entries)
	if err != nil {
		t.Fatal(err)
	}
	gate := httpapi.NewGate(f.loop, httpapi.GateConfig{})
	s, err := mcpserver.New(mcpserver.Config{Catalog: f.set, Runner: &mcpserver.LoopRunner{Backend: f.loop, Events: f.events, Gate: gate}, RunScript: true})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(httpapi.New(f.loop, httpapi.Config{Tokens: set, Gate: gate, Events: f.events, Index: f.index, MCP: s.Handler()}))
	t.Cleanup(func() {
		s.Close()
		srv.CloseClientConnections()
		srv.Close()
	})
	return srv
}

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	return names
}

// /mcp honours the API's tokens: a token without the submit scope is
// refused, a client is shown and may call only its token's tools, and
// run_script's sessions may use those tools alone. Over the host's own
// /mcp (the loop runner) and from splash mcp (the API runner) alike.
func TestMCPHonoursTheTokensScopesAndTools(t *testing.T) {
	f := newFixture(t)
	srv := f.scopedAPI(t)

	if _, err := connectHTTP(t, srv.URL, secret("reader"), nil); err == nil || !strings.Contains(err.Error(), "Forbidden") {
		t.Fatalf("a reader connected to /mcp: %v", err)
	}

	clients := map[string]*mcp.ClientSession{}
	cs, err := connectHTTP(t, srv.URL, secret("narrow"), nil)
	if err != nil {
		t.Fatal(err)
	}
	clients["loop"] = cs
	if got := toolNames(t, cs); strings.Join(got, ",") != "run_script,t.echo" {
		t.Fatalf("narrow is shown %q", got)
	}
	api, err := apiclient.New(srv.URL, secret("narrow"))
	if err != nil {
		t.Fatal(err)
	}
	viaAPI, err := mcpserver.New(mcpserver.Config{Catalog: f.set, Runner: &mcpserver.APIRunner{Client: api}, RunScript: true})
	if err != nil {
		t.Fatal(err)
	}
	clients["api"] = connect(t, viaAPI, nil)

	calls := []struct {
		name      string
		tool      string
		args      map[string]any
		wantError string // "" for success, with the text wantText
		wantText  string
	}{
		{"its tool", "t.echo", map[string]any{"input": "hi"}, "", "hi"},
		{"another tool", "t.sum", map[string]any{"numbers": []int{1}}, "tool not permitted", ""},
		{"a script of its tools", mcpserver.RunScriptTool, map[string]any{"source": `return await tool.start("t.echo", "ok")`}, "", "ok"},
		{"a script reaching further", mcpserver.RunScriptTool, map[string]any{"source": `return await tool.start_json("t.any", {})`}, "tool not granted", ""},
		{"a script granting more", mcpserver.RunScriptTool, map[string]any{"source": `return 1`, "tools": []string{"t.*"}}, "tool not permitted", ""},
		{"a script narrowing", mcpserver.RunScriptTool, map[string]any{"source": `return await tool.start("t.echo", "x")`, "tools": []string{}}, "tool not granted", ""},
	}
	for runner, cs := range clients {
		for _, c := range calls {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: c.tool, Arguments: c.args})
			if err != nil {
				t.Fatalf("%s, %s: %v", runner, c.name, err)
			}
			text := textOf(res)
			if res.IsError != (c.wantError != "") || !strings.Contains(text, c.wantError) || (c.wantError == "" && text != c.wantText) {
				t.Errorf("%s, %s: error=%v %q, want error %q or %q", runner, c.name, res.IsError, text, c.wantError, c.wantText)
			}
		}
	}

	// What narrow ran over MCP is narrow's on the API, and nobody else's.
	for token, want := range map[string]bool{"narrow": true, "full": false} {
		c, err := apiclient.New(srv.URL, secret(token))
		if err != nil {
			t.Fatal(err)
		}
		list, err := c.Sessions(context.Background(), "", 100)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(list) > 0; got != want {
			t.Errorf("%s sees %d sessions, want some: %v", token, len(list), want)
		}
	}
}

// run_script refuses what POST /v1/sessions refuses, with the same
// message, whichever runner runs it.
func TestRunScriptAgreesWithTheAPI(t *testing.T) {
	f := newFixture(t)
	api := f.api(t, nil)
	cases := []struct {
		name string
		args map[string]any
		code string
	}{
		{"unknown grant", map[string]any{"source": "return 1", "grants": []string{"tool", "network"}}, "unknown_grant"},
		{"empty grant", map[string]any{"source": "return 1", "grants": []string{""}}, "invalid_field"},
		{"malformed tools", map[string]any{"source": "return 1", "tools": []string{"t."}}, "invalid_tool_pattern"},
		{"fine", map[string]any{"source": "return 1", "grants": []string{"assert"}, "tools": []string{"t.*"}}, ""},
	}
	for runnerName, runner := range f.runners(t) {
		s, err := mcpserver.New(mcpserver.Config{Catalog: f.set, Runner: runner, RunScript: true})
		if err != nil {
			t.Fatal(err)
		}
		cs := connect(t, s, nil)
		for _, c := range cases {
			body, _ := json.Marshal(c.args)
			req, _ := http.NewRequest(http.MethodPost, api.URL+"/v1/sessions", strings.NewReader(string(body)))
			req.Header.Set("Authorization", "Bearer "+testToken)
			req.Header.Set("Content-Type", "application/json")
			resp, err := api.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var apiErr struct {
				Error struct{ Code, Message string } `json:"error"`
			}
			_ = json.NewDecoder(resp.Body).Decode(&apiErr)
			resp.Body.Close()

			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: mcpserver.RunScriptTool, Arguments: c.args})
			if err != nil {
				t.Fatal(err)
			}
			text := textOf(res)
			if c.code == "" {
				if resp.StatusCode != http.StatusCreated || res.IsError {
					t.Errorf("%s, %s: API %d, run_script %q: both should run it", runnerName, c.name, resp.StatusCode, text)
				}
				continue
			}
			if apiErr.Error.Code != c.code || !res.IsError || !strings.Contains(text, apiErr.Error.Message) {
				t.Errorf("%s, %s: API %d %s %q; run_script error=%v %q", runnerName, c.name, resp.StatusCode, apiErr.Error.Code, apiErr.Error.Message, res.IsError, text)
			}
		}
	}
}

// An MCP session belongs to the token that opened it: another token
// presenting its id is refused.
func TestMCPSessionIsItsTokens(t *testing.T) {
	f := newFixture(t)
	srv := f.scopedAPI(t)
	post := func(token, session, body string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/mcp", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+secret(token))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	resp := post("narrow", "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	id := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || id == "" {
		t.Fatalf("initialize: %d, session %q", resp.StatusCode, id)
	}
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	if resp := post("full", id, list); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("another token used the session: %d", resp.StatusCode)
	}
	if resp := post("narrow", id, list); resp.StatusCode != http.StatusOK {
		t.Fatalf("its own token: %d", resp.StatusCode)
	}
}
