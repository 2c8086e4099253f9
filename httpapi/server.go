package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/hostloop"
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
	backend Backend
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
	s := &server{
		backend: backend,
		cfg:     cfg,
		auth:    newAuthenticator(cfg),
		mux:     http.NewServeMux(),
		allowed: make(map[string][]string),
		streams: newStreamLimiter(cfg.MaxStreams, cfg.MaxStreamsPerToken),
	}
	s.route(http.MethodGet, "/healthz", false, s.healthz)
	s.route(http.MethodGet, "/readyz", false, s.readyz)
	if cfg.Metrics != nil {
		metrics := cfg.Metrics
		s.route(http.MethodGet, "/metrics", !cfg.PublicMetrics, metrics.ServeHTTP)
	}
	s.route(http.MethodPost, "/v1/sessions", true, s.submit)
	s.route(http.MethodGet, "/v1/sessions/{id}", true, s.session)
	s.route(http.MethodGet, "/v1/sessions/{id}/audit", true, s.audit)
	s.route(http.MethodGet, "/v1/sessions/{id}/events", true, s.events)
	s.route(http.MethodPost, "/v1/sessions/{id}/operations/{op}/cancel", true, s.cancel)
	s.route(http.MethodPost, "/v1/sessions/{id}/cancel", true, s.cancelSession)
	s.route(http.MethodPost, "/v1/sessions/{id}/reconcile", true, s.reconcileSession)
	s.route(http.MethodGet, "/v1/operations", true, s.operations)
	s.route(http.MethodPost, "/v1/operations/{request}/cancel", true, s.cancelByRequest)
	s.route(http.MethodGet, "/v1/sessions", true, s.sessions)
	s.route(http.MethodGet, "/v1/sessions/{id}/source", true, s.source)
	s.route(http.MethodGet, "/v1/tools", true, s.tools)
	s.route(http.MethodGet, "/v1/workers", true, s.workers)
	if cfg.UI != nil {
		// The console's files are public (they hold no secret); the API
		// they call is not.
		s.mux.Handle("GET /ui/", cfg.UI)
		s.mux.Handle("GET /ui", http.RedirectHandler("/ui/", http.StatusMovedPermanently))
	}
	if cfg.MCP != nil {
		s.mux.Handle("/mcp", s.guard(true, mcpHandler(cfg.MCP)))
	}
	for pattern, methods := range s.allowed {
		allow := strings.Join(methods, ", ")
		s.mux.Handle(pattern, s.guard(true, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", allow)
			s.writeError(w, r, fmt.Errorf("%w: %s %s (allowed: %s)", ErrMethodNotAllowed, clipTo(r.Method, maxEchoBytes, false), clipTo(r.URL.Path, maxEchoBytes, false), allow))
		}))
	}
	// Unknown paths are authenticated too, so a client without a token
	// cannot map the API.
	s.mux.Handle("/", s.guard(true, func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, fmt.Errorf("%w: %s %s", ErrNotFound, clipTo(r.Method, maxEchoBytes, false), clipTo(r.URL.Path, maxEchoBytes, false)))
	}))
	return s.mux
}

// route registers h for method and pattern; the method-less pattern added
// in New answers every other method with a JSON 405.
func (s *server) route(method, pattern string, authenticated bool, h http.HandlerFunc) {
	s.mux.Handle(method+" "+pattern, s.guard(authenticated, h))
	methods := append(s.allowed[pattern], method)
	if method == http.MethodGet {
		methods = append(methods, http.MethodHead)
	}
	slices.Sort(methods)
	s.allowed[pattern] = methods
}

func (s *server) guard(authenticated bool, h http.HandlerFunc) http.Handler {
	if !authenticated {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := s.auth.check(r); err != nil {
			s.writeError(w, r, err)
			return
		}
		h(w, r)
	})
}
