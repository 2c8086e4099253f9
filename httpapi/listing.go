package httpapi

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/splashfabric/splashfabric/hostloop"
	"github.com/splashfabric/splashfabric/httpapi/apitoken"
	"github.com/splashfabric/splashfabric/httpapi/apiwire"

	"github.com/splashfabric/splashfabric/internal/clip"
)

// Bounds of GET /v1/sessions?limit=.
const (
	defaultListLimit = 100
	maxListLimit     = DefaultIndexSessions
)

// sessions lists the host's recent sessions, newest first, optionally of
// one state.
func (s *server) sessions(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Index == nil {
		s.writeError(w, r, fmt.Errorf("%w: GET /v1/sessions needs a session index", ErrNotServed))
		return
	}
	state, limit, err := listQuery(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, apiwire.SessionList{Sessions: s.cfg.Index.list(state, limit, s.gate.visible(r.Context()))})
}

// listQuery reads state= and limit=; any other parameter is refused, as
// an unknown body field is.
func listQuery(r *http.Request) (hostloop.SessionState, int, error) {
	q := r.URL.Query()
	limit := defaultListLimit
	var state hostloop.SessionState
	for name, values := range q {
		if len(values) != 1 {
			return "", 0, fmt.Errorf("%w: query parameter %s given %d times", ErrInvalidField, clip.Quote(name, clip.Echo), len(values))
		}
		v := values[0]
		switch name {
		case "state":
			switch st := hostloop.SessionState(v); st {
			case "", hostloop.SessionSuspended, hostloop.SessionCompleted, hostloop.SessionFailed, hostloop.SessionCancelled:
				state = st
			default:
				return "", 0, fmt.Errorf("%w: state is %s, want suspended, completed, failed or cancelled", ErrInvalidField, clip.Quote(v, clip.Echo))
			}
		case "limit":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > maxListLimit {
				return "", 0, fmt.Errorf("%w: limit is %s, want 1 to %d", ErrInvalidField, clip.Quote(v, clip.Echo), maxListLimit)
			}
			limit = n
		default:
			return "", 0, fmt.Errorf("%w: unknown query parameter %s", ErrInvalidField, clip.Quote(name, clip.Echo))
		}
	}
	return state, limit, nil
}

// source answers a session's script as submitted to this process.
func (s *server) source(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Index == nil {
		s.writeError(w, r, fmt.Errorf("%w: GET /v1/sessions/{id}/source needs a session index", ErrNotServed))
		return
	}
	id := hostloop.SessionID(r.PathValue("id"))
	if err := s.gate.may(r.Context(), apitoken.ScopeRead, id); err != nil {
		s.writeError(w, r, err)
		return
	}
	src, ok := s.cfg.Index.source(id)
	if !ok {
		// A session the host cannot answer for at all is unknown; one it
		// knows but whose source it does not hold says so.
		if _, _, err := s.backend.Status(r.Context(), id); err != nil {
			s.writeError(w, r, err)
			return
		}
		s.writeError(w, r, fmt.Errorf("%w: %s", ErrSourceUnavailable, clip.Quote(string(id), clip.Echo)))
		return
	}
	writeJSON(w, http.StatusOK, src)
}
