package httpapi_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/splashfabric/splashfabric/httpapi"
)

// TestMCPMount: /mcp is served only when configured, behind the token,
// for every method the MCP transport uses.
func TestMCPMount(t *testing.T) {
	mcp := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "mcp "+r.Method)
	})
	tests := []struct {
		name     string
		handler  http.Handler
		method   string
		token    string
		wantCode int
		wantBody string
	}{
		{"post", mcp, http.MethodPost, testToken, http.StatusOK, "mcp POST"},
		{"get", mcp, http.MethodGet, testToken, http.StatusOK, "mcp GET"},
		{"delete", mcp, http.MethodDelete, testToken, http.StatusOK, "mcp DELETE"},
		{"no token", mcp, http.MethodPost, "", http.StatusUnauthorized, `"missing_token"`},
		{"wrong token", mcp, http.MethodPost, "nope", http.StatusUnauthorized, `"invalid_token"`},
		{"not configured", nil, http.MethodPost, testToken, http.StatusNotFound, `"not_found"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(httpapi.New(newFakeBackend(nil), httpapi.Config{Token: testToken, MCP: tt.handler}))
			defer srv.Close()
			req, _ := http.NewRequest(tt.method, srv.URL+"/mcp", nil)
			if tt.token != "" {
				req.Header.Set("Authorization", "Bearer "+tt.token)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.wantCode || !strings.Contains(string(body), tt.wantBody) {
				t.Fatalf("%d %s, want %d with %s", resp.StatusCode, body, tt.wantCode, tt.wantBody)
			}
		})
	}
}
