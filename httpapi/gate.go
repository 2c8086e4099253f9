package httpapi

import (
	"context"
	"fmt"
	"slices"

	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/hostloop"
	"github.com/splashfabric/splashfabric/httpapi/apitoken"
	"github.com/splashfabric/splashfabric/protocol"

	"github.com/splashfabric/splashfabric/internal/clip"
)

// GateConfig sizes a Gate.
type GateConfig struct {
	// MaxOwned bounds the sessions whose owner the gate remembers; zero
	// picks DefaultOwnedSessions. The oldest is let go first; its owner
	// is then read from its status when it is asked for.
	MaxOwned int
	// SubmitRate bounds the submissions a second of one token owner,
	// with bursts of SubmitBurst; over it a submission is refused with
	// ErrSubmissionRate (429 submission_rate, with Retry-After). Zero
	// picks DefaultSubmitRate and DefaultSubmitBurst; a negative rate
	// leaves submissions unbounded.
	SubmitRate  float64
	SubmitBurst int
}

// Gate is a Backend that acts for the token in each call's context
// (apitoken.NewContext): it refuses what the token's scopes do not
// allow, admits a submission only with the grants and tools the token may
// give, and lets a token reach only the sessions it submitted, unless it
// is admin. A session of another token reads as unknown, so its existence
// is not told either. Any goroutine may call it.
//
// The API serves every endpoint through one; mcpserver.LoopRunner admits
// its sessions through the same one (Config.Gate), so that what is run
// over MCP obeys the same rules and is its token's on the API.
type Gate struct {
	backend Backend
	owners  *owners
	submits *rateLimiter
}

var _ Backend = (*Gate)(nil)

// NewGate returns a gate in front of backend.
func NewGate(backend Backend, cfg GateConfig) *Gate {
	if cfg.SubmitRate == 0 {
		cfg.SubmitRate, cfg.SubmitBurst = DefaultSubmitRate, DefaultSubmitBurst
	}
	if cfg.SubmitBurst <= 0 {
		cfg.SubmitBurst = int(max(cfg.SubmitRate, 1))
	}
	return &Gate{backend: backend, owners: newOwners(cfg.MaxOwned), submits: newRateLimiter(cfg.SubmitRate, cfg.SubmitBurst)}
}

// token returns the token ctx carries if it holds scope.
func token(ctx context.Context, scope apitoken.Scope) (*apitoken.Token, error) {
	t, ok := apitoken.FromContext(ctx)
	if !ok {
		return nil, ErrMissingToken
	}
	if !t.Has(scope) {
		return nil, &ScopeError{Token: t.Name(), Scope: scope}
	}
	return t, nil
}

// Submit admits sub for the token in ctx (scope submit), then submits it
// and records the session as the token's owner's. A submission that names no
// tools gets the token's; one that names tools beyond them is refused
// with a *ToolError, a malformed pattern with host.ErrInvalidToolPattern
// and an unknown grant with ErrUnknownGrant, all before anything runs.
func (g *Gate) Submit(ctx context.Context, sub hostloop.Submission) (hostloop.SessionStatus, error) {
	t, err := token(ctx, apitoken.ScopeSubmit)
	if err != nil {
		return hostloop.SessionStatus{}, err
	}
	if err := CheckGrants(sub.Grants); err != nil {
		return hostloop.SessionStatus{}, err
	}
	if err := g.submits.take(t.Owner()); err != nil {
		return hostloop.SessionStatus{}, err
	}
	if sub.Tools, err = admitTools(t, sub.Tools); err != nil {
		return hostloop.SessionStatus{}, err
	}
	// Its script's slices are scheduled fairly between owners.
	sub.Owner = t.Owner()
	st, err := g.backend.Submit(ctx, sub)
	if err != nil {
		return st, err
	}
	g.owners.add(st.ID, t.Owner())
	return st, nil
}

// CheckGrants refuses grants that name no script capability: a misspelt
// grant would run the script without the capability its client meant to
// give. POST /v1/sessions, the Gate and MCP's run_script all apply it.
func CheckGrants(grants []string) error {
	for i, g := range grants {
		switch {
		case g == "":
			return fmt.Errorf("%w: grants[%d] is empty", ErrInvalidField, i)
		case !host.IsGrant(g):
			return fmt.Errorf("%w: grants[%d] is %s, want one of %q", ErrUnknownGrant, i, clip.Quote(g, clip.Echo), host.Grants())
		}
	}
	return nil
}

// CheckTools refuses a malformed tool pattern, naming it by its index.
// POST /v1/sessions, the Gate and MCP's run_script all apply it.
func CheckTools(tools []string) error {
	for i, s := range tools {
		if len(s) > protocol.MaxToolNameBytes {
			// Longer than any tool name may be; said with its length,
			// not repeated whole.
			return fmt.Errorf("%w: tools[%d] is %s", host.ErrInvalidToolPattern, i, clip.Quote(s, clip.Echo))
		}
		if _, err := host.ParseToolPattern(s); err != nil {
			return fmt.Errorf("tools[%d]: %w", i, err)
		}
	}
	return nil
}

// admitTools returns the tool patterns of a session t submits: t's own
// when tools is nil, else tools, each of which must be well-formed and
// within one of t's patterns.
func admitTools(t *apitoken.Token, tools []string) ([]string, error) {
	if tools == nil {
		return t.Tools().Strings(), nil
	}
	if err := CheckTools(tools); err != nil {
		return nil, err
	}
	for _, s := range tools {
		p, _ := host.ParseToolPattern(s)
		if !t.Tools().Covers(p) {
			return nil, &ToolError{Token: t.Name(), Pattern: s, Allowed: t.Tools().Strings()}
		}
	}
	return slices.Clone(tools), nil
}

// may returns nil when the token in ctx holds scope and reaches session
// id; a session it does not reach is unknown to it. A session this
// process does not know the owner of (one it resumed or adopted, or that
// another host answers for) is asked about: its status names its owner.
func (g *Gate) may(ctx context.Context, scope apitoken.Scope, id hostloop.SessionID) error {
	t, err := token(ctx, scope)
	if err != nil {
		return err
	}
	if g.reaches(t, id) {
		return nil
	}
	if _, known := g.owners.owner(id); !known {
		if st, _, err := g.backend.Status(ctx, id); err == nil && st.Owner != "" {
			g.owners.add(id, st.Owner)
			if st.Owner == t.Owner() {
				return nil
			}
		}
	}
	return fmt.Errorf("%w: %s", hostloop.ErrUnknownSession, clip.Quote(string(id), clip.Echo))
}

// reaches reports whether t may see session id, by the owners this
// process remembers.
func (g *Gate) reaches(t *apitoken.Token, id hostloop.SessionID) bool {
	if t.Admin() {
		return true
	}
	owner, ok := g.owners.owner(id)
	return ok && owner == t.Owner()
}

// visible returns the filter of the sessions the token in ctx reaches.
// owner, when set, is the owner its status reports, for a session this
// process did not submit.
func (g *Gate) visible(ctx context.Context) func(id hostloop.SessionID, owner string) bool {
	t, ok := apitoken.FromContext(ctx)
	if !ok {
		return func(hostloop.SessionID, string) bool { return false }
	}
	return func(id hostloop.SessionID, owner string) bool {
		if _, known := g.owners.owner(id); !known && owner != "" {
			return t.Admin() || owner == t.Owner()
		}
		return g.reaches(t, id)
	}
}

// Status reads a session of the token in ctx (scope read).
func (g *Gate) Status(ctx context.Context, id hostloop.SessionID) (hostloop.SessionStatus, []host.AuditEvent, error) {
	if err := g.may(ctx, apitoken.ScopeRead, id); err != nil {
		return hostloop.SessionStatus{}, nil, err
	}
	return g.backend.Status(ctx, id)
}

// Operations lists the live operations of the sessions the token in ctx
// reaches (scope read).
func (g *Gate) Operations(ctx context.Context) ([]hostloop.OperationStatus, error) {
	return g.operations(ctx, apitoken.ScopeRead)
}

// operations lists the live operations of the sessions the token in ctx
// reaches, if it holds scope: what it may read, or what it may cancel.
func (g *Gate) operations(ctx context.Context, scope apitoken.Scope) ([]hostloop.OperationStatus, error) {
	t, err := token(ctx, scope)
	if err != nil {
		return nil, err
	}
	ops, err := g.backend.Operations(ctx)
	if err != nil || t.Admin() {
		return ops, err
	}
	return slices.DeleteFunc(ops, func(o hostloop.OperationStatus) bool { return !g.reaches(t, o.Session) }), nil
}

// Cancel cancels an operation of a session of the token in ctx (scope
// cancel).
func (g *Gate) Cancel(ctx context.Context, id hostloop.SessionID, op host.ExternalToolID) error {
	if err := g.may(ctx, apitoken.ScopeCancel, id); err != nil {
		return err
	}
	return g.backend.Cancel(ctx, id, op)
}

// CancelSession ends a session of the token in ctx (scope cancel).
func (g *Gate) CancelSession(ctx context.Context, id hostloop.SessionID, force bool) (hostloop.SessionStatus, error) {
	if err := g.may(ctx, apitoken.ScopeCancel, id); err != nil {
		return hostloop.SessionStatus{}, err
	}
	return g.backend.CancelSession(ctx, id, force)
}

// ReconcileSession asks the workers about the live operations of a
// session of the token in ctx (scope cancel: it may end them).
func (g *Gate) ReconcileSession(ctx context.Context, id hostloop.SessionID) (int, error) {
	if err := g.may(ctx, apitoken.ScopeCancel, id); err != nil {
		return 0, err
	}
	return g.backend.ReconcileSession(ctx, id)
}
