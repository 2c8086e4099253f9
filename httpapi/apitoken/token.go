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
	owner  string
	scopes scopeSet
	tools  host.ToolPatterns
}

// Spec describes a token.
type Spec struct {
	// Name names the token in logs and errors. It must be a legal
	// tool-name token (letters, digits, '_', '-', '.'), so it needs no
	// escaping wherever it is printed.
	Name string
	// Owner owns the sessions the token submits, and the token reaches
	// the sessions of its owner: tokens that share an owner (a client's
	// submitting token and its read-only dashboard's) share sessions.
	// Empty means Name. Same alphabet as Name.
	Owner  string
	Scopes []Scope
	// Tools are the patterns of the tools the token's sessions may use
	// (see host.ParseToolPattern); nil is every tool, empty none.
	Tools []string
}

// New makes the token spec describes.
func New(spec Spec) (*Token, error) {
	if err := protocol.ValidateToolName(spec.Name); err != nil {
		return nil, fmt.Errorf("%w: name %q: letters, digits, '_', '-' and '.' only, at most %d bytes", ErrInvalidToken, spec.Name, protocol.MaxToolNameBytes)
	}
	t := &Token{name: spec.Name, owner: spec.Owner}
	if t.owner == "" {
		t.owner = t.name
	} else if err := protocol.ValidateToolName(t.owner); err != nil {
		return nil, fmt.Errorf("%w: token %q: owner %q: letters, digits, '_', '-' and '.' only", ErrInvalidToken, spec.Name, spec.Owner)
	}
	for _, s := range spec.Scopes {
		sc, err := ParseScope(string(s))
		if err != nil {
			return nil, fmt.Errorf("token %q: %w", spec.Name, err)
		}
		t.scopes.add(sc)
	}
	ps, err := host.ParseToolPatterns(spec.Tools)
	if err != nil {
		return nil, fmt.Errorf("%w: token %q: tools: %w", ErrInvalidToken, spec.Name, err)
	}
	t.tools = ps
	return t, nil
}

// Root returns a token named name that holds every scope and may use every
// tool: the single token of splash dev and of a host given one token.
func Root(name string) *Token {
	return &Token{name: name, owner: name, scopes: ^scopeSet(0)}
}

// Name is the token's name, for logs and errors.
func (t *Token) Name() string { return t.name }

// Owner owns the sessions the token submits; its name unless the token
// shares an owner with others.
func (t *Token) Owner() string { return t.owner }

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
