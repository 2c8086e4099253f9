package apitoken

import (
	"context"
	"fmt"

	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/protocol"
)

// Token is what one bearer token may do. It holds no secret (the token
// itself is known only by its digest) and never changes, so any goroutine
// may read it; a reloaded file makes new Tokens.
type Token struct {
	name   string
	scopes scopeSet
	tools  host.ToolPatterns
}

// New describes a token named name with scopes, whose sessions may use
// the tools patterns name (nil: every tool; empty: none). The name must be
// a legal tool-name token, so it can label logs and metrics unescaped.
func New(name string, scopes []Scope, tools []string) (*Token, error) {
	if err := protocol.ValidateToolName(name); err != nil {
		return nil, fmt.Errorf("%w: name %q: letters, digits, '_', '-' and '.' only, at most %d bytes", ErrInvalidToken, name, protocol.MaxToolNameBytes)
	}
	t := &Token{name: name}
	for _, s := range scopes {
		sc, err := ParseScope(string(s))
		if err != nil {
			return nil, fmt.Errorf("token %q: %w", name, err)
		}
		t.scopes.add(sc)
	}
	ps, err := host.ParseToolPatterns(tools)
	if err != nil {
		return nil, fmt.Errorf("%w: token %q: tools: %w", ErrInvalidToken, name, err)
	}
	t.tools = ps
	return t, nil
}

// Root returns a token named name that holds every scope and may use every
// tool: the single token of splash dev and of a host given one token.
func Root(name string) *Token {
	t := &Token{name: name, scopes: ^scopeSet(0)}
	return t
}

// Name is the token's name: what owns its sessions and labels its logs.
func (t *Token) Name() string { return t.name }

// Has reports whether the token holds scope; admin holds them all.
func (t *Token) Has(scope Scope) bool {
	return t.scopes.has(scope) || t.scopes.has(ScopeAdmin)
}

// Admin reports whether the token reaches every token's sessions.
func (t *Token) Admin() bool { return t.scopes.has(ScopeAdmin) }

// Scopes lists the scopes the token holds, as given (admin's implied ones
// are not added).
func (t *Token) Scopes() []Scope {
	var out []Scope
	for _, s := range allScopes {
		if t.scopes.has(s) {
			out = append(out, s)
		}
	}
	return out
}

// Tools returns the patterns of the tools the token's sessions may use;
// nil is every tool.
func (t *Token) Tools() host.ToolPatterns { return t.tools }

// MayUse reports whether the token's sessions may use tool.
func (t *Token) MayUse(tool string) bool { return t.tools.Match(tool) }

type contextKey struct{}

// NewContext returns ctx carrying t, the token a request was made with.
func NewContext(ctx context.Context, t *Token) context.Context {
	return context.WithValue(ctx, contextKey{}, t)
}

// FromContext returns the token ctx carries, if any.
func FromContext(ctx context.Context) (*Token, bool) {
	t, ok := ctx.Value(contextKey{}).(*Token)
	return t, ok && t != nil
}
