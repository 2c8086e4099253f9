package httpapi

import (
	"context"
	"io"
	"net/http"
	"sync"
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
// It lifts the server's write deadline for an MCP request, and its read
// deadline once the request's body has been read: a tools/call answers as
// a stream of progress notifications that lasts as long as the call, and
// a GET holds the session's notification stream open. What bounds them
// is the MCP session itself (its idle timeout) and the call's own
// deadline. The body itself must arrive within the server's read timeout,
// as any request's: a client trickling it holds its connection no longer.
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
		_ = rc.SetWriteDeadline(time.Time{})
		r.Body = liftAfterBody(r, rc)
		// The guard has authenticated the request already; the SDK's
		// middleware only wants a bearer of its own shape to hand the
		// token on, even with authentication off.
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer checked")
		withToken.ServeHTTP(w, r)
	}
}

// liftAfterBody returns r's body, which lifts the read deadline once it
// has been read to its end (or closed); a request without a body has it
// lifted at once. Until then the server's read timeout bounds the body.
func liftAfterBody(r *http.Request, rc *http.ResponseController) io.ReadCloser {
	if r.Body == nil || r.Body == http.NoBody || (r.ContentLength == 0 && len(r.TransferEncoding) == 0) {
		_ = rc.SetReadDeadline(time.Time{})
		return r.Body
	}
	return &deadlineBody{ReadCloser: r.Body, rc: rc}
}

// deadlineBody lifts its request's read deadline at its end.
type deadlineBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	once sync.Once
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.lift()
	}
	return n, err
}

func (b *deadlineBody) Close() error {
	b.lift()
	return b.ReadCloser.Close()
}

func (b *deadlineBody) lift() { b.once.Do(func() { _ = b.rc.SetReadDeadline(time.Time{}) }) }
