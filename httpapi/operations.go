package httpapi

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/hostloop"
	"github.com/splashfabric/splashfabric/httpapi/apitoken"
	"github.com/splashfabric/splashfabric/httpapi/apiwire"

	"github.com/splashfabric/splashfabric/internal/clip"
)

func (s *server) operations(w http.ResponseWriter, r *http.Request) {
	ops, err := s.backend.Operations(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := operationsOf(ops)
	s.markQueued(r.Context(), out)
	writeJSON(w, http.StatusOK, apiwire.OperationList{Operations: out})
}

func (s *server) cancel(w http.ResponseWriter, r *http.Request) {
	op, err := parseOperationID(r.PathValue("op"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.cancelOp(w, r, hostloop.SessionID(r.PathValue("id")), op)
}

// cancelByRequest cancels by request id, which is unique across sessions,
// so a client holding only a line of GET /v1/operations can cancel it.
func (s *server) cancelByRequest(w http.ResponseWriter, r *http.Request) {
	want := r.PathValue("request")
	ops, err := s.gate.operations(r.Context(), apitoken.ScopeCancel)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	for _, o := range ops {
		if o.RequestID == want {
			s.cancelOp(w, r, o.Session, o.ID)
			return
		}
	}
	s.writeError(w, r, fmt.Errorf("%w: request %s", host.ErrUnknownOperation, clip.Quote(want, clip.Echo)))
}

func (s *server) cancelOp(w http.ResponseWriter, r *http.Request, session hostloop.SessionID, op host.ExternalToolID) {
	if err := s.backend.Cancel(r.Context(), session, op); err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, apiwire.CancelResponse{Session: string(session), Operation: op.String(), Cancellation: "requested"})
}

// cancelSession ends a session: its live operations are cancelled
// two-phase, or, with ?force=true, asserted cancelled without their
// workers (for a session stuck behind workers that cannot answer).
func (s *server) cancelSession(w http.ResponseWriter, r *http.Request) {
	force := false
	for name, values := range r.URL.Query() {
		switch {
		case name != "force":
			s.writeError(w, r, fmt.Errorf("%w: unknown query parameter %s", ErrInvalidField, clip.Quote(name, clip.Echo)))
			return
		case len(values) != 1 || values[0] != "true" && values[0] != "false":
			s.writeError(w, r, fmt.Errorf("%w: force is %s, want true or false", ErrInvalidField, clip.Quote(strings.Join(values, ","), clip.Echo)))
			return
		}
		force = values[0] == "true"
	}
	st, err := s.backend.CancelSession(r.Context(), hostloop.SessionID(r.PathValue("id")), force)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, apiwire.SessionCancelResponse{Session: sessionOf(st), Forced: force})
}

// reconcileSession asks the workers about every live operation of a
// session now, rather than when its reconciliation is next due.
func (s *server) reconcileSession(w http.ResponseWriter, r *http.Request) {
	id := hostloop.SessionID(r.PathValue("id"))
	n, err := s.backend.ReconcileSession(r.Context(), id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, apiwire.ReconcileResponse{Session: string(id), Operations: n})
}

// parseOperationID accepts an operation id as printed ("op-7") or bare
// ("7").
func parseOperationID(s string) (host.ExternalToolID, error) {
	n, err := strconv.ParseUint(strings.TrimPrefix(s, "op-"), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %s, want op-<n>", ErrInvalidOperationID, clip.Quote(s, clip.Echo))
	}
	return host.ExternalToolID(n), nil
}
