package httpapi

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// Defaults for the zero values of ServerConfig.
const (
	// DefaultReadHeaderTimeout bounds reading a request's headers.
	DefaultReadHeaderTimeout = 10 * time.Second
	// DefaultReadTimeout bounds reading a whole request, body included
	// (at most Config.MaxBodyBytes), so a client trickling its body
	// holds its connection no longer.
	DefaultReadTimeout = 30 * time.Second
	// DefaultWriteTimeout bounds a response, from the end of its
	// request's headers: above DefaultMaxExecutionBudget, since a
	// submission's first script step runs before its answer.
	DefaultWriteTimeout = 30 * time.Second
	// DefaultIdleTimeout bounds how long a keep-alive connection waits
	// for its next request.
	DefaultIdleTimeout = 30 * time.Second
	// DefaultMaxHeaderBytes bounds a request's line and headers: a bearer
	// token and a session id need far less than net/http's 1 MB.
	DefaultMaxHeaderBytes = 32 << 10
	// DefaultMaxConns bounds the connections a server holds at once.
	DefaultMaxConns = 512
	// DefaultMaxConnsPerClient bounds the connections one client address
	// holds at once: an eighth of DefaultMaxConns.
	DefaultMaxConnsPerClient = 64
)

// ServerConfig bounds every connection of an API server. Zero values
// take the defaults above.
type ServerConfig struct {
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
	MaxHeaderBytes    int
	// MaxConns bounds open connections; one beyond is answered with 503
	// connection_limit and closed (see LimitListener).
	MaxConns int
	// MaxConnsPerClient bounds the open connections of one client IP
	// address; one beyond is answered with 429 client_connection_limit
	// and closed (see LimitListenerPerClient). Zero picks
	// DefaultMaxConnsPerClient, capped at MaxConns; negative: no bound
	// per client (a host behind a proxy that every client comes
	// through).
	MaxConnsPerClient int
	// OnRefused, if set, is called with "connection_limit" for every
	// refused connection and CodeIdleTimeout for every keep-alive
	// connection closed for idling, so the process can count them. It
	// may run on any goroutine.
	OnRefused func(code string)
}

func (c ServerConfig) withDefaults() ServerConfig {
	def := func(p *time.Duration, d time.Duration) {
		if *p <= 0 {
			*p = d
		}
	}
	def(&c.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	def(&c.ReadTimeout, DefaultReadTimeout)
	def(&c.WriteTimeout, DefaultWriteTimeout)
	def(&c.IdleTimeout, DefaultIdleTimeout)
	if c.MaxHeaderBytes <= 0 {
		c.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if c.MaxConns <= 0 {
		c.MaxConns = DefaultMaxConns
	}
	if c.MaxConnsPerClient == 0 {
		c.MaxConnsPerClient = min(DefaultMaxConnsPerClient, c.MaxConns)
	}
	if c.OnRefused == nil {
		c.OnRefused = func(string) {}
	}
	return c
}

// Server is an http.Server bounded by a ServerConfig. Its Serve refuses
// connections beyond the bound; event streams lift the read and write
// timeouts for themselves (see Config.StreamWriteTimeout).
type Server struct {
	*http.Server
	cfg ServerConfig
}

// NewServer returns a Server for h bounded by cfg.
func NewServer(h http.Handler, cfg ServerConfig) *Server {
	cfg = cfg.withDefaults()
	idle := &idleWatch{timeout: cfg.IdleTimeout, onRefused: cfg.OnRefused, since: make(map[net.Conn]time.Time)}
	return &Server{
		Server: &http.Server{
			Handler:           h,
			ReadHeaderTimeout: cfg.ReadHeaderTimeout,
			ReadTimeout:       cfg.ReadTimeout,
			WriteTimeout:      cfg.WriteTimeout,
			IdleTimeout:       cfg.IdleTimeout,
			MaxHeaderBytes:    cfg.MaxHeaderBytes,
			ConnState:         idle.connState,
		},
		cfg: cfg,
	}
}

// Serve serves on l through LimitListener; it returns as http.Server's
// Serve does.
func (s *Server) Serve(l net.Listener) error {
	return s.Server.Serve(LimitListenerPerClient(l, s.cfg.MaxConns, s.cfg.MaxConnsPerClient, s.cfg.OnRefused))
}

// idleWatch counts the keep-alive connections the server closes for
// idling. net/http closes them silently; a connection that goes from idle
// to closed no sooner than the idle timeout was closed by it (a client's
// own close, or a shutdown, comes earlier).
type idleWatch struct {
	timeout   time.Duration
	onRefused func(string)

	// mu guards since, each idle connection's start of idling; at most
	// one entry per open connection.
	mu    sync.Mutex
	since map[net.Conn]time.Time
}

func (w *idleWatch) connState(c net.Conn, state http.ConnState) {
	w.mu.Lock()
	t, wasIdle := w.since[c]
	delete(w.since, c)
	if state == http.StateIdle {
		w.since[c] = time.Now()
	}
	w.mu.Unlock()
	if wasIdle && state == http.StateClosed && time.Since(t) >= w.timeout {
		w.onRefused(CodeIdleTimeout)
	}
}
