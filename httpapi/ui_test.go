package httpapi_test

import (
	"io"
	"net/http"
	"testing"

	"github.com/splashfabric/splashfabric/httpapi"
)

// The console's files are served without a token; everything else still
// wants one.
func TestUIIsPublicAndTheAPIIsNot(t *testing.T) {
	e := newAPIEnv(t, func(c *httpapi.Config) {
		c.UI = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "page "+r.URL.Path) })
	})
	e.srv.Client().CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	tests := []struct {
		method, path string
		wantStatus   int
		wantBody     string
	}{
		{http.MethodGet, "/ui/", http.StatusOK, "page /ui/"},
		{http.MethodGet, "/ui/app.js", http.StatusOK, "page /ui/app.js"},
		{http.MethodGet, "/ui", http.StatusMovedPermanently, ""},
		{http.MethodPost, "/ui/", http.StatusUnauthorized, ""},
		{http.MethodGet, "/v1/operations", http.StatusUnauthorized, ""},
	}
	for _, tt := range tests {
		resp := e.do(t, tt.method, tt.path, "-", "")
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != tt.wantStatus || (tt.wantBody != "" && string(body) != tt.wantBody) {
			t.Errorf("%s %s: %d %q, want %d %q", tt.method, tt.path, resp.StatusCode, body, tt.wantStatus, tt.wantBody)
		}
	}
}
