package httpapi

import (
	"context"
	"fmt"
	"net/http"
)

// healthBody is the answer of a passing probe.
type healthBody struct {
	Status string `json:"status"`
	// Resuming is how many durable sessions the host is still bringing
	// back from their ledgers (readyz only).
	Resuming int `json:"resuming,omitempty"`
}

// healthz answers as long as the process serves HTTP: it checks nothing
// else, so a liveness probe restarts only a wedged process.
func (s *server) healthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, healthBody{Status: "ok"})
}

// readyz runs the configured readiness check under its own timeout, so a
// hung dependency makes the probe fail instead of hang.
func (s *server) readyz(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Ready != nil {
		ctx, cancel := context.WithTimeout(r.Context(), s.cfg.ReadyTimeout)
		defer cancel()
		if err := s.cfg.Ready(ctx); err != nil {
			s.writeError(w, r, fmt.Errorf("%w: %v", ErrNotReady, err))
			return
		}
	}
	body := healthBody{Status: "ready"}
	if s.cfg.Resuming != nil {
		body.Resuming = s.cfg.Resuming()
	}
	writeJSON(w, http.StatusOK, body)
}
