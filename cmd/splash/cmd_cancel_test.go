package main

import (
	"context"
	"strings"
	"testing"

	"github.com/splashfabric/splashfabric/apiclient/apitest"
	"github.com/splashfabric/splashfabric/internal/testwait"
)

func TestCancel(t *testing.T) {
	srv := apitest.Start(t)
	s := submitSleeper(t, srv)
	code, stdout, stderr := invoke(t, apiEnv(srv), "cancel", s.ID, "op-1")
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	if want := "cancellation requested: session " + s.ID + " operation op-1\n"; stdout != want {
		t.Errorf("stdout %q, want %q", stdout, want)
	}
	c := testClient(t, srv)
	testwait.Until(t, 0, "the session to fail as cancelled", func() bool {
		got, err := c.Session(context.Background(), s.ID)
		return err == nil && got.State == "failed"
	})
}

func TestCancelErrors(t *testing.T) {
	srv := apitest.Start(t)
	s := submitSleeper(t, srv)
	tests := []struct {
		name       string
		env        map[string]string
		args       []string
		wantStderr string
	}{
		{"unknown session", nil, []string{"s-nope", "op-1"}, "(404 unknown_session)"},
		{"unknown operation", nil, []string{s.ID, "op-9"}, "(404 unknown_operation)"},
		{"bad operation id", nil, []string{s.ID, "first"}, "(400 invalid_operation_id)"},
		{"wrong token", map[string]string{envAPIURL: srv.URL, envAPIToken: "wrong"}, []string{s.ID, "op-1"}, "httpapi: invalid bearer token (401 invalid_token); the host refused the API token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := tt.env
			if env == nil {
				env = apiEnv(srv)
			}
			code, stdout, stderr := invoke(t, env, append([]string{"cancel"}, tt.args...)...)
			if code != 1 || stdout != "" || !strings.Contains(stderr, "splash cancel: ") || !strings.Contains(stderr, tt.wantStderr) {
				t.Fatalf("exit %d, stdout %q; stderr lacks %q:\n%s", code, stdout, tt.wantStderr, stderr)
			}
		})
	}
}
