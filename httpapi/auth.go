package httpapi

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
)

// authenticator checks bearer tokens. It compares SHA-256 digests in
// constant time, so neither the token's bytes nor its length leak through
// response timing.
type authenticator struct {
	digest   [sha256.Size]byte
	disabled bool
	// closed is set when no token is configured: nothing can match.
	closed bool
	onFail func(reason string)
}

func newAuthenticator(cfg Config) *authenticator {
	return &authenticator{
		digest:   sha256.Sum256([]byte(cfg.Token)),
		disabled: cfg.DisableAuth,
		closed:   cfg.Token == "",
		onFail:   cfg.OnAuthFailure,
	}
}

// check returns nil when r carries the right token.
func (a *authenticator) check(r *http.Request) error {
	if a.disabled {
		return nil
	}
	token, ok := bearer(r.Header.Get("Authorization"))
	if !ok {
		a.fail("missing_token")
		return ErrMissingToken
	}
	got := sha256.Sum256([]byte(token))
	if subtle.ConstantTimeCompare(got[:], a.digest[:]) != 1 || a.closed {
		a.fail("invalid_token")
		return ErrInvalidToken
	}
	return nil
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
