package apitoken

import (
	"fmt"
	"slices"
	"strings"
)

// Scope is one kind of thing a token may do.
type Scope string

// The scopes a token may hold.
const (
	// ScopeSubmit runs scripts: POST /v1/sessions, MCP's tools and
	// run_script.
	ScopeSubmit Scope = "submit"
	// ScopeRead reads the token's own sessions (state, audit, events,
	// source, the session and operation lists) and the tools and workers
	// within its tool patterns.
	ScopeRead Scope = "read"
	// ScopeCancel cancels operations of the token's own sessions.
	ScopeCancel Scope = "cancel"
	// ScopeMetrics reads /metrics when it is not public: what a scraper
	// needs and nothing more.
	ScopeMetrics Scope = "metrics"
	// ScopeAdmin holds every other scope and reaches every token's
	// sessions.
	ScopeAdmin Scope = "admin"
)

// allScopes in the order they are listed.
var allScopes = []Scope{ScopeSubmit, ScopeRead, ScopeCancel, ScopeMetrics, ScopeAdmin}

// Scopes returns every scope, in a fixed order.
func Scopes() []Scope { return slices.Clone(allScopes) }

// ParseScope reads a scope's name.
func ParseScope(s string) (Scope, error) {
	if i := slices.Index(allScopes, Scope(s)); i >= 0 {
		return allScopes[i], nil
	}
	names := make([]string, len(allScopes))
	for i, sc := range allScopes {
		names[i] = string(sc)
	}
	return "", fmt.Errorf("%w: unknown scope %q, want one of %s", ErrInvalidToken, s, strings.Join(names, ", "))
}

// scopeSet is a set of scopes as bits, in allScopes' order.
type scopeSet uint8

func (s scopeSet) has(sc Scope) bool {
	i := slices.Index(allScopes, sc)
	return i >= 0 && s&(1<<i) != 0
}

func (s *scopeSet) add(sc Scope) {
	if i := slices.Index(allScopes, sc); i >= 0 {
		*s |= 1 << i
	}
}
