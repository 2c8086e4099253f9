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
	"github.com/splashfabric/splashfabric/httpapi"
)

// archiveBackend answers Status from fixed statuses, as a loop answers
// from its archive for sessions it no longer holds.
type archiveBackend struct {
	*fakeBackend
	statuses map[host.SessionID]host.SessionStatus
	errs     map[host.SessionID]error
}

func (a *archiveBackend) Status(_ context.Context, id host.SessionID) (host.SessionStatus, []host.AuditEvent, error) {
	if err := a.errs[id]; err != nil {
		return host.SessionStatus{}, nil, err
	}
	if s, ok := a.statuses[id]; ok {
		return s, nil, nil
	}
	return host.SessionStatus{}, nil, fmt.Errorf("%w: %q", host.ErrUnknownSession, id)
}

func TestLostSessionsAnswerWithAnErrorCode(t *testing.T) {
	failed := func(id string, err error) host.SessionStatus {
		return host.SessionStatus{ID: host.SessionID(id), State: host.SessionFailed, Err: err, Error: err.Error(), Created: t0}
	}
	restarted := fmt.Errorf("%w: the host process h1-0123456789ab ended", host.ErrHostRestarted)
	stopped := fmt.Errorf("%w: the host process h1-0123456789ab stopped", host.ErrHostStopped)
	b := &archiveBackend{
		fakeBackend: newFakeBackend(nil),
		statuses: map[host.SessionID]host.SessionStatus{
			"lost":      failed("lost", restarted),
			"stopped":   failed("stopped", stopped),
			"threw":     failed("threw", errors.New("Error: boom")),
			"truncated": {ID: "truncated", State: host.SessionCompleted, Value: "abc", Truncated: true, Created: t0},
		},
		errs: map[host.SessionID]error{
			"archive-down": fmt.Errorf("%w: session %q: nats: timeout", host.ErrArchiveUnavailable, "archive-down"),
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
		{id: "threw", status: http.StatusOK, wantErrMsg: "Error: boom"},
		{id: "truncated", status: http.StatusOK, truncated: true},
		{id: "never", status: http.StatusNotFound, apiCode: "unknown_session"},
		{id: "archive-down", status: http.StatusServiceUnavailable, apiCode: "archive_unavailable"},
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
			var s httpapi.Session
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
