package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/hostloop"
	"github.com/splashfabric/splashfabric/httpapi/apitoken"

	"github.com/splashfabric/splashfabric/internal/clip"
)

// Backend is what the API fronts. *hostloop.Loop satisfies it.
type Backend interface {
	Submit(ctx context.Context, sub hostloop.Submission) (hostloop.SessionStatus, error)
	Status(ctx context.Context, id hostloop.SessionID) (hostloop.SessionStatus, []host.AuditEvent, error)
	Operations(ctx context.Context) ([]hostloop.OperationStatus, error)
	Cancel(ctx context.Context, id hostloop.SessionID, op host.ExternalToolID) error
	CancelSession(ctx context.Context, id hostloop.SessionID, force bool) (hostloop.SessionStatus, error)
	ReconcileSession(ctx context.Context, id hostloop.SessionID) (int, error)
}

var _ Backend = (*hostloop.Loop)(nil)

type server struct {
	// backend is the gate: every call acts for the request's token. raw
	// is what it fronts, for what a request does on its own behalf (a
	// submission waiting for its session's end).
	backend Backend
	gate    *Gate
	raw     Backend
	cfg     Config
	auth    *authenticator
	mux     *http.ServeMux
	streams *streamLimiter
	// allowed collects the methods of each pattern, for the Allow header
	// of a 405.
	allowed map[string][]string
}

// New returns the host API handler over backend. It holds no goroutines:
// every request runs on the server's goroutine for it.
func New(backend Backend, cfg Config) http.Handler {
	cfg = cfg.withDefaults()
	gate := cfg.Gate
	if gate == nil {
		gate = NewGate(backend, GateConfig{})
	}
	s := &server{
		backend: gate,
		gate:    gate,
		raw:     gate.backend,
		cfg:     cfg,
		auth:    newAuthenticator(cfg),
		mux:     http.NewServeMux(),
		allowed: make(map[string][]string),
		streams: newStreamLimiter(cfg.MaxStreams, cfg.MaxStreamsPerToken),
	}
	// Each route names the scope it needs (docs/api.md has the table);
	// a new endpoint is one line here.
	s.route(http.MethodGet, "/healthz", noToken, s.healthz)
	s.route(http.MethodGet, "/readyz", noToken, s.readyz)
	if cfg.Metrics != nil {
		scope := apitoken.ScopeMetrics
		if cfg.PublicMetrics {
			scope = noToken
		}
		s.route(http.MethodGet, "/metrics", scope, cfg.Metrics.ServeHTTP)
	}
	s.route(http.MethodPost, "/v1/sessions", apitoken.ScopeSubmit, s.submit)
	s.route(http.MethodGet, "/v1/sessions/{id}", apitoken.ScopeRead, s.session)
	s.route(http.MethodGet, "/v1/sessions/{id}/audit", apitoken.ScopeRead, s.audit)
	s.route(http.MethodGet, "/v1/sessions/{id}/events", apitoken.ScopeRead, s.events)
	s.route(http.MethodPost, "/v1/sessions/{id}/operations/{op}/cancel", apitoken.ScopeCancel, s.cancel)
	s.route(http.MethodPost, "/v1/sessions/{id}/cancel", apitoken.ScopeCancel, s.cancelSession)
	s.route(http.MethodPost, "/v1/sessions/{id}/reconcile", apitoken.ScopeCancel, s.reconcileSession)
	s.route(http.MethodGet, "/v1/operations", apitoken.ScopeRead, s.operations)
	s.route(http.MethodPost, "/v1/operations/{request}/cancel", apitoken.ScopeCancel, s.cancelByRequest)
	s.route(http.MethodGet, "/v1/sessions", apitoken.ScopeRead, s.sessions)
	s.route(http.MethodGet, "/v1/sessions/{id}/source", apitoken.ScopeRead, s.source)
	s.route(http.MethodGet, "/v1/tools", apitoken.ScopeRead, s.tools)
	s.route(http.MethodGet, "/v1/workers", apitoken.ScopeRead, s.workers)
	s.route(http.MethodGet, "/v1/sessions/{id}/timeline", apitoken.ScopeRead, s.timeline)
	s.route(http.MethodGet, "/v1/metrics/tools", apitoken.ScopeRead, s.toolSeries)
	if cfg.UI != nil {
		// The console's files are public (they hold no secret); the API
		// they call is not.
		s.mux.Handle("GET /ui/", cfg.UI)
		s.mux.Handle("GET /ui", http.RedirectHandler("/ui/", http.StatusMovedPermanently))
	}
	if cfg.MCP != nil {
		// Every MCP call runs a session; the scopes of what it reads
		// back are the call's own.
		s.mux.Handle("/mcp", s.guard(apitoken.ScopeSubmit, mcpHandler(cfg.MCP)))
	}
	for pattern, methods := range s.allowed {
		allow := strings.Join(methods, ", ")
		s.mux.Handle(pattern, s.guard(anyToken, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", allow)
			s.writeError(w, r, fmt.Errorf("%w: %s %s (allowed: %s)", ErrMethodNotAllowed, clip.String(r.Method, clip.Echo), clip.String(r.URL.Path, clip.Echo), allow))
		}))
	}
	// Unknown paths are authenticated too, so a client without a token
	// cannot map the API.
	s.mux.Handle("/", s.guard(anyToken, func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, fmt.Errorf("%w: %s %s", ErrNotFound, clip.String(r.Method, clip.Echo), clip.String(r.URL.Path, clip.Echo)))
	}))
	return s.mux
}

// Scopes of routes that are not a token's scopes.
const (
	// noToken: the route is served without a token.
	noToken apitoken.Scope = ""
	// anyToken: any valid token, whatever its scopes (an unknown path is
	// authenticated so that a client without a token cannot map the
	// API).
	anyToken apitoken.Scope = "(any)"
)

// route registers h for method and pattern, served to tokens holding
// scope; the method-less pattern added in New answers every other method
// with a JSON 405.
func (s *server) route(method, pattern string, scope apitoken.Scope, h http.HandlerFunc) {
	s.mux.Handle(method+" "+pattern, s.guard(scope, h))
	methods := append(s.allowed[pattern], method)
	if method == http.MethodGet {
		methods = append(methods, http.MethodHead)
	}
	slices.Sort(methods)
	s.allowed[pattern] = methods
}

// guard authenticates a request, refuses a token without scope with 403,
// and hands h the request with its token in its context.
func (s *server) guard(scope apitoken.Scope, h http.HandlerFunc) http.Handler {
	if scope == noToken {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t, err := s.auth.check(r)
		if err == nil && scope != anyToken && !t.Has(scope) {
			err = &ScopeError{Token: t.Name(), Scope: scope}
		}
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		h(w, r.WithContext(apitoken.NewContext(r.Context(), t)))
	})
}
