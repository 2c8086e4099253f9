package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestHealthcheck(t *testing.T) {
	tests := []struct {
		name     string
		status   int
		wantCode int
	}{
		{name: "ok", status: http.StatusOK, wantCode: 0},
		{name: "no content", status: http.StatusNoContent, wantCode: 0},
		{name: "unavailable", status: http.StatusServiceUnavailable, wantCode: 1},
		{name: "redirect is not healthy", status: http.StatusNotModified, wantCode: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodGet || r.URL.Path != "/healthz" {
					http.NotFound(w, r)
					return
				}
				w.WriteHeader(tt.status)
			}))
			defer srv.Close()
			code, _, stderr := invoke(t, nil, "healthcheck", "--url", srv.URL+"/healthz")
			if code != tt.wantCode {
				t.Errorf("exit %d, want %d; stderr: %s", code, tt.wantCode, stderr)
			}
		})
	}
}

func TestHealthcheckUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	code, _, stderr := invoke(t, map[string]string{"SPLASH_HEALTHCHECK_URL": url}, "healthcheck")
	if code != 1 || !strings.Contains(stderr, "unhealthy") {
		t.Fatalf("exit %d, stderr %q; want 1 and unhealthy", code, stderr)
	}
}
