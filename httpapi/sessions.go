package httpapi

import (
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/splashfabric/splashfabric/hostloop"
	"github.com/splashfabric/splashfabric/httpapi/apiwire"
	"github.com/splashfabric/splashfabric/workflow"

	"github.com/splashfabric/splashfabric/internal/clip"
)

func (s *server) submit(w http.ResponseWriter, r *http.Request) {
	var req apiwire.SubmitRequest
	if err := decodeJSON(w, r, s.cfg.MaxBodyBytes, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	sub, err := s.submission(req)
	if err == nil {
		err = s.checkWait(req.WaitMS)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	deadline := time.Now().Add(time.Duration(req.WaitMS) * time.Millisecond)
	ctx, span := s.traceSubmission(r, &sub)
	st, err := s.backend.Submit(ctx, sub)
	endSubmission(span, st, err)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if s.cfg.Index != nil {
		s.cfg.Index.submitted(st, req.Source)
	}
	if req.WaitMS > 0 && !terminal(st.State) {
		if end, ok := s.waitEnd(r, st.ID, deadline); ok {
			st = end
		}
	}
	w.Header().Set("Location", "/v1/sessions/"+url.PathEscape(string(st.ID)))
	writeJSON(w, http.StatusCreated, s.sessionOf(st))
}

// submission validates a request against the server's limits. A script
// that fails when it runs is not an error here: it is a session whose
// state is failed.
func (s *server) submission(req apiwire.SubmitRequest) (hostloop.Submission, error) {
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
	case req.MaxLifetimeMS < 0 || req.MaxLifetimeMS > maxLifetimeMS:
		return hostloop.Submission{}, fmt.Errorf("%w: max_lifetime_ms is %d, want 0 to %d", ErrInvalidField, req.MaxLifetimeMS, int64(maxLifetimeMS))
	}
	budget := time.Duration(req.ExecutionBudgetMS) * time.Millisecond
	if budget > s.cfg.MaxExecutionBudget || budget/time.Millisecond != time.Duration(req.ExecutionBudgetMS) {
		return hostloop.Submission{}, fmt.Errorf("%w: execution_budget_ms is %d, maximum is %d", ErrLimitTooHigh, req.ExecutionBudgetMS, s.cfg.MaxExecutionBudget.Milliseconds())
	}
	if err := CheckGrants(req.Grants); err != nil {
		return hostloop.Submission{}, err
	}
	restart, err := workflow.ParseRestartPolicy(req.Restart)
	if err != nil {
		return hostloop.Submission{}, fmt.Errorf("%w: restart is %s, want resume or fail", ErrInvalidField, clip.Quote(req.Restart, clip.Echo))
	}
	if req.Restart == "" {
		restart = ""
	}
	return hostloop.Submission{
		Source:          req.Source,
		Grants:          req.Grants,
		Tools:           req.Tools,
		ToolCallBudget:  req.ToolCallBudget,
		MaxPending:      req.MaxPending,
		ExecutionBudget: budget,
		Restart:         restart,
		MaxLifetime:     time.Duration(req.MaxLifetimeMS) * time.Millisecond,
	}, nil
}

// maxLifetimeMS bounds max_lifetime_ms (ten years) so its product with a
// millisecond cannot overflow.
const maxLifetimeMS = 10 * 365 * 24 * 3600 * 1000

func (s *server) session(w http.ResponseWriter, r *http.Request) {
	st, _, err := s.backend.Status(r.Context(), hostloop.SessionID(r.PathValue("id")))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := s.sessionOf(st)
	s.markQueued(r.Context(), out.Operations)
	writeJSON(w, http.StatusOK, out)
}

func (s *server) audit(w http.ResponseWriter, r *http.Request) {
	st, events, err := s.backend.Status(r.Context(), hostloop.SessionID(r.PathValue("id")))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := apiwire.AuditLog{Session: string(st.ID), Events: make([]apiwire.AuditEntry, 0, len(events))}
	for _, e := range events {
		out.Events = append(out.Events, auditEntryOf(e))
	}
	writeJSON(w, http.StatusOK, out)
}

// checkWait validates wait_ms against the server's maximum.
func (s *server) checkWait(ms int64) error {
	switch {
	case ms < 0:
		return fmt.Errorf("%w: wait_ms must not be negative, got %d", ErrInvalidField, ms)
	case ms == 0:
		return nil
	case s.cfg.Events == nil:
		return fmt.Errorf("%w: wait_ms needs them", ErrEventsUnavailable)
	}
	if wait := time.Duration(ms) * time.Millisecond; wait > s.cfg.MaxWait || wait/time.Millisecond != time.Duration(ms) {
		return fmt.Errorf("%w: wait_ms is %d, maximum is %d", ErrLimitTooHigh, ms, s.cfg.MaxWait.Milliseconds())
	}
	return nil
}

// waitEnd waits until deadline for session id to end and returns its
// state then: terminal, or as it stands when the wait ran out; false
// when the client left first. It waits on the session's end alone
// (Broadcaster.Done), which no number of the session's other events can
// make it miss.
func (s *server) waitEnd(r *http.Request, id hostloop.SessionID, deadline time.Time) (hostloop.SessionStatus, bool) {
	done, cancel := s.cfg.Events.Done(id)
	defer cancel()
	// Asked after subscribing: an end reported before the subscription
	// shows in this status, one after it comes down done.
	st, _, err := s.raw.Status(r.Context(), id)
	if err != nil {
		return st, false
	}
	if terminal(st.State) {
		return st, true
	}
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	select {
	case <-r.Context().Done():
		return st, false
	case end, ok := <-done:
		if ok {
			return end, true
		}
	case <-timer.C:
	}
	// The wait ran out (or the broadcaster closed): the loop's own answer
	// is the session as it stands.
	st, _, err = s.raw.Status(r.Context(), id)
	return st, err == nil
}
