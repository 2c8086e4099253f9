package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/hostloop"
	"github.com/splashfabric/splashfabric/httpapi"
	"github.com/splashfabric/splashfabric/httpapi/apiwire"
)

// archiveBackend answers Status from fixed statuses, as a loop answers
// from its archive for sessions it no longer holds.
type archiveBackend struct {
	*fakeBackend
	statuses map[hostloop.SessionID]hostloop.SessionStatus
	errs     map[hostloop.SessionID]error
}

func (a *archiveBackend) Status(_ context.Context, id hostloop.SessionID) (hostloop.SessionStatus, []host.AuditEvent, error) {
	if err := a.errs[id]; err != nil {
		return hostloop.SessionStatus{}, nil, err
	}
	if s, ok := a.statuses[id]; ok {
		return s, nil, nil
	}
	return hostloop.SessionStatus{}, nil, fmt.Errorf("%w: %q", hostloop.ErrUnknownSession, id)
}

func TestLostSessionsAnswerWithAnErrorCode(t *testing.T) {
	failed := func(id string, err error) hostloop.SessionStatus {
		return hostloop.SessionStatus{ID: hostloop.SessionID(id), State: hostloop.SessionFailed, Err: err, Error: err.Error(), Created: t0}
	}
	restarted := fmt.Errorf("%w: the host process h1-0123456789ab ended", hostloop.ErrHostRestarted)
	stopped := fmt.Errorf("%w: the host process h1-0123456789ab stopped", hostloop.ErrHostStopped)
	withdrawn := fmt.Errorf("%w: its submitter left", hostloop.ErrSubmissionWithdrawn)
	b := &archiveBackend{
		fakeBackend: newFakeBackend(nil),
		statuses: map[hostloop.SessionID]hostloop.SessionStatus{
			"lost":      failed("lost", restarted),
			"stopped":   failed("stopped", stopped),
			"withdrawn": failed("withdrawn", withdrawn),
			"threw":     failed("threw", errors.New("Error: boom")),
			"truncated": {ID: "truncated", State: hostloop.SessionCompleted, Value: "abc", Truncated: true, Created: t0},
		},
		errs: map[hostloop.SessionID]error{
			"archive-down": fmt.Errorf("%w: session %q: nats: timeout", hostloop.ErrArchiveUnavailable, "archive-down"),
			// As the loop wraps an archive's refusal of a forged record.
			"forged": fmt.Errorf("%w: session %q: %w: s.forged: bad tag", hostloop.ErrArchiveUnavailable, "forged", hostloop.ErrRecordRejected),
		},
	}
	srv := newServer(t, b)
	tests := []struct {
		id         string
		status     int
		errorCode  string // of the session
		apiCode    string // of an error body
		truncated  bool
		wantErrMsg string
	}{
		{id: "lost", status: http.StatusOK, errorCode: "host_restarted", wantErrMsg: restarted.Error()},
		{id: "stopped", status: http.StatusOK, errorCode: "host_stopped", wantErrMsg: stopped.Error()},
		{id: "withdrawn", status: http.StatusOK, errorCode: "submission_withdrawn", wantErrMsg: withdrawn.Error()},
		{id: "threw", status: http.StatusOK, wantErrMsg: "Error: boom"},
		{id: "truncated", status: http.StatusOK, truncated: true},
		{id: "never", status: http.StatusNotFound, apiCode: "unknown_session"},
		{id: "archive-down", status: http.StatusServiceUnavailable, apiCode: "archive_unavailable"},
		{id: "forged", status: http.StatusInternalServerError, apiCode: "record_rejected"},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			resp := srv.do(t, http.MethodGet, "/v1/sessions/"+tt.id, testToken, "")
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.status)
			}
			if tt.apiCode != "" {
				var e errorResponse
				if err := json.NewDecoder(resp.Body).Decode(&e); err != nil || e.Error.Code != tt.apiCode {
					t.Fatalf("error body %+v, %v; want code %s", e, err, tt.apiCode)
				}
				return
			}
			var s apiwire.Session
			if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
				t.Fatal(err)
			}
			if s.ErrorCode != tt.errorCode || s.Error != tt.wantErrMsg || s.Truncated != tt.truncated || s.Operations == nil {
				t.Fatalf("session %+v", s)
			}
		})
	}
}

// newServer serves backend with the test token and no event streams.
func newServer(t *testing.T, backend httpapi.Backend) *apiEnv {
	t.Helper()
	srv := httptest.NewServer(httpapi.New(backend, httpapi.Config{Token: testToken}))
	t.Cleanup(srv.Close)
	return &apiEnv{srv: srv}
}
