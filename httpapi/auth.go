package httpapi

import (
	"net/http"
	"strings"

	"github.com/splashfabric/splashfabric/httpapi/apitoken"
)

// RootTokenName names the one all-powerful token of a Config that gives a
// Token rather than Tokens.
const RootTokenName = "root"

// AnonymousTokenName names the token every request is served as when
// Config.DisableAuth is set.
const AnonymousTokenName = "anonymous"

// authenticator finds the token a request carries. Tokens are known by
// their SHA-256 digests, so neither a token's bytes nor its length leak
// through response timing, and the server holds no secret.
type authenticator struct {
	tokens apitoken.Verifier
	// anonymous is who every request is when authentication is off.
	anonymous *apitoken.Token
	onFail    func(reason string)
}

func newAuthenticator(cfg Config) *authenticator {
	a := &authenticator{tokens: cfg.Tokens, onFail: cfg.OnAuthFailure}
	switch {
	case cfg.DisableAuth:
		a.anonymous = apitoken.Root(AnonymousTokenName)
	case a.tokens == nil && cfg.Token != "":
		a.tokens = apitoken.Single(RootTokenName, cfg.Token)
	}
	return a
}

// check returns the token r carries. With no tokens configured nothing
// matches: the API fails closed.
func (a *authenticator) check(r *http.Request) (*apitoken.Token, error) {
	if a.anonymous != nil {
		return a.anonymous, nil
	}
	token, ok := bearer(r.Header.Get("Authorization"))
	if !ok {
		a.fail("missing_token")
		return nil, ErrMissingToken
	}
	if a.tokens == nil {
		a.fail("invalid_token")
		return nil, ErrInvalidToken
	}
	t, ok := a.tokens.Lookup(token)
	if !ok {
		a.fail("invalid_token")
		return nil, ErrInvalidToken
	}
	return t, nil
}

func (a *authenticator) fail(reason string) {
	if a.onFail != nil {
		a.onFail(reason)
	}
}

// bearer extracts the token of an "Authorization: Bearer <token>" header;
// the scheme is case-insensitive (RFC 9110 §11.1).
func bearer(h string) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}
