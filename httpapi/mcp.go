package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/splashfabric/splashfabric/httpapi/apitoken"
)

// mcpTokenKey is the key of the request's token in the MCP TokenInfo's
// Extra.
const mcpTokenKey = "splash.token"

// MCPToken returns the API token an MCP request was made with, from the
// TokenInfo the SDK hands each request (CallToolRequest.Extra.TokenInfo):
// the MCP server runs a call's session for that token.
func MCPToken(ti *auth.TokenInfo) (*apitoken.Token, bool) {
	if ti == nil {
		return nil, false
	}
	t, ok := ti.Extra[mcpTokenKey].(*apitoken.Token)
	return t, ok && t != nil
}

// mcpHandler serves MCP for the token the guard found: the SDK's bearer
// middleware hands it to every request of the MCP session as TokenInfo,
// with the token's name as the user, so the SDK also refuses a session
// that another token opened.
//
// It lifts the server's read and write deadlines for an MCP request: a
// tools/call answers as a stream of progress notifications that lasts as
// long as the call, and a GET holds the session's notification stream
// open. What bounds them is the MCP session itself (its idle timeout) and
// the call's own deadline.
func mcpHandler(h http.Handler) http.HandlerFunc {
	withToken := auth.RequireBearerToken(func(ctx context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
		t, ok := apitoken.FromContext(r.Context())
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		scopes := make([]string, 0, 5)
		for _, s := range t.Scopes() {
			scopes = append(scopes, string(s))
		}
		return &auth.TokenInfo{UserID: t.Name(), Scopes: scopes, Extra: map[string]any{mcpTokenKey: t}}, nil
	}, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h)
	return func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		_ = rc.SetReadDeadline(time.Time{})
		_ = rc.SetWriteDeadline(time.Time{})
		// The guard has authenticated the request already; the SDK's
		// middleware only wants a bearer of its own shape to hand the
		// token on, even with authentication off.
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer checked")
		withToken.ServeHTTP(w, r)
	}
}
