package httpapi

import (
	"github.com/splashfabric/splashfabric/workflow"

	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/hostloop"
)

func (s *server) submit(w http.ResponseWriter, r *http.Request) {
	var req SubmitRequest
	if err := decodeJSON(w, r, s.cfg.MaxBodyBytes, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	sub, err := s.submission(req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	st, err := s.backend.Submit(r.Context(), sub)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if s.cfg.Index != nil {
		s.cfg.Index.submitted(st, req.Source)
	}
	w.Header().Set("Location", "/v1/sessions/"+url.PathEscape(string(st.ID)))
	writeJSON(w, http.StatusCreated, sessionOf(st))
}

// submission validates a request against the server's limits. A script
// that fails when it runs is not an error here: it is a session whose
// state is failed.
func (s *server) submission(req SubmitRequest) (hostloop.Submission, error) {
	switch {
	case req.Source == "":
		return hostloop.Submission{}, fmt.Errorf("%w: source is required", ErrInvalidField)
	case len(req.Source) > s.cfg.MaxSourceBytes:
		return hostloop.Submission{}, fmt.Errorf("%w: source is %d bytes, limit is %d", ErrScriptTooLarge, len(req.Source), s.cfg.MaxSourceBytes)
	case req.ToolCallBudget < 0:
		return hostloop.Submission{}, fmt.Errorf("%w: tool_call_budget must not be negative, got %d", ErrInvalidField, req.ToolCallBudget)
	case req.MaxPending < 0:
		return hostloop.Submission{}, fmt.Errorf("%w: max_pending must not be negative, got %d", ErrInvalidField, req.MaxPending)
	case req.ExecutionBudgetMS < 0:
		return hostloop.Submission{}, fmt.Errorf("%w: execution_budget_ms must not be negative, got %d", ErrInvalidField, req.ExecutionBudgetMS)
	}
	budget := time.Duration(req.ExecutionBudgetMS) * time.Millisecond
	if budget > s.cfg.MaxExecutionBudget || budget/time.Millisecond != time.Duration(req.ExecutionBudgetMS) {
		return hostloop.Submission{}, fmt.Errorf("%w: execution_budget_ms is %d, maximum is %d", ErrLimitTooHigh, req.ExecutionBudgetMS, s.cfg.MaxExecutionBudget.Milliseconds())
	}
	for i, g := range req.Grants {
		switch {
		case g == "":
			return hostloop.Submission{}, fmt.Errorf("%w: grants[%d] is empty", ErrInvalidField, i)
		case !host.IsGrant(g):
			// A misspelt grant would run the script without the
			// capability its client meant to give.
			return hostloop.Submission{}, fmt.Errorf("%w: grants[%d] is %s, want one of %q", ErrUnknownGrant, i, quoteClip(g), host.Grants())
		}
	}
	restart, err := workflow.ParseRestartPolicy(req.Restart)
	if err != nil {
		return hostloop.Submission{}, fmt.Errorf("%w: restart is %s, want resume or fail", ErrInvalidField, quoteClip(req.Restart))
	}
	if req.Restart == "" {
		restart = ""
	}
	return hostloop.Submission{
		Source:          req.Source,
		Grants:          req.Grants,
		ToolCallBudget:  req.ToolCallBudget,
		MaxPending:      req.MaxPending,
		ExecutionBudget: budget,
		Restart:         restart,
	}, nil
}

func (s *server) session(w http.ResponseWriter, r *http.Request) {
	st, _, err := s.backend.Status(r.Context(), hostloop.SessionID(r.PathValue("id")))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := sessionOf(st)
	s.markQueued(r.Context(), out.Operations)
	writeJSON(w, http.StatusOK, out)
}

func (s *server) audit(w http.ResponseWriter, r *http.Request) {
	st, events, err := s.backend.Status(r.Context(), hostloop.SessionID(r.PathValue("id")))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := AuditLog{Session: string(st.ID), Events: make([]AuditEntry, 0, len(events))}
	for _, e := range events {
		out.Events = append(out.Events, auditEntryOf(e))
	}
	writeJSON(w, http.StatusOK, out)
}
