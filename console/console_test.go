package console_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/splashfabric/splashfabric/console"
)

func get(t *testing.T, path string) (*http.Response, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	console.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	resp := rec.Result()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}

func TestFilesAreServedUnderAStrictPolicy(t *testing.T) {
	tests := []struct {
		path, wantType, wantText string
	}{
		{"/ui/", "text/html; charset=utf-8", `<script src="app.js" defer></script>`},
		{"/ui/index.html", "text/html; charset=utf-8", `<link rel="stylesheet" href="style.css">`},
		{"/ui/app.js", "text/javascript; charset=utf-8", `"use strict";`},
		{"/ui/style.css", "text/css; charset=utf-8", ":root"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			resp, body := get(t, tt.path)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d", resp.StatusCode)
			}
			h := resp.Header
			for name, want := range map[string]string{
				"Content-Type":            tt.wantType,
				"Content-Security-Policy": console.ContentSecurityPolicy,
				"X-Content-Type-Options":  "nosniff",
				"Referrer-Policy":         "no-referrer",
			} {
				if got := h.Get(name); got != want {
					t.Errorf("%s = %q, want %q", name, got, want)
				}
			}
			if !strings.Contains(body, tt.wantText) {
				t.Errorf("body lacks %q", tt.wantText)
			}
		})
	}
	for _, directive := range []string{"script-src 'self'", "style-src 'self'", "connect-src 'self'", "frame-ancestors 'none'"} {
		if !strings.Contains(console.ContentSecurityPolicy, directive) {
			t.Errorf("policy lacks %q", directive)
		}
	}
	if strings.Contains(console.ContentSecurityPolicy, "unsafe") {
		t.Errorf("policy allows something unsafe: %s", console.ContentSecurityPolicy)
	}
}

func TestOtherPathsAreNotFound(t *testing.T) {
	for _, path := range []string{"/ui/nope.js", "/ui/../console.go", "/ui/assets/app.js", "/other"} {
		if resp, _ := get(t, path); resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", path, resp.StatusCode)
		}
	}
}

// TestPageWritesNoMarkup keeps the page's own files free of the ways a
// value could become markup or code; the browser tests check the result.
func TestPageWritesNoMarkup(t *testing.T) {
	_, page := get(t, "/ui/")
	_, script := get(t, "/ui/app.js")
	for _, bad := range []*regexp.Regexp{
		regexp.MustCompile(`<script>`),           // inline script
		regexp.MustCompile(`\son[a-z]+\s*=`),     // inline handler
		regexp.MustCompile(`\sstyle\s*=`),        // inline style
		regexp.MustCompile(`(?i)https?://[a-z]`), // another origin
	} {
		if bad.MatchString(page) {
			t.Errorf("index.html matches %s", bad)
		}
	}
	for _, bad := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function", "new EventSource", "?token", "&token"} {
		if strings.Contains(script, bad) {
			t.Errorf("app.js uses %s", bad)
		}
	}
}
