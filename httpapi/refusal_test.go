package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
)

func TestErrorsEchoBoundedIDs(t *testing.T) {
	long := strings.Repeat("é", 10_000) // 20,000 bytes, cut between runes
	cases := []struct {
		name, method, path, body string
		wantCode                 string
	}{
		{"session id", http.MethodGet, "/v1/sessions/" + long, "", "unknown_session"},
		{"operation id", http.MethodPost, "/v1/sessions/s-1/operations/" + long + "/cancel", "", "invalid_operation_id"},
		{"request id", http.MethodPost, "/v1/operations/" + long + "/cancel", "", "unknown_operation"},
		{"path", http.MethodGet, "/v2/" + long, "", "not_found"},
		{"field name", http.MethodPost, "/v1/sessions", `{"source":"1","` + strings.Repeat("k", 2000) + `":1}`, "unknown_field"},
		{"grant", http.MethodPost, "/v1/sessions", `{"source":"1","grants":["` + strings.Repeat("g", 2000) + `"]}`, "unknown_grant"},
		{"tool pattern", http.MethodPost, "/v1/sessions", `{"source":"1","tools":["` + strings.Repeat("t", 2000) + `"]}`, "invalid_tool_pattern"},
	}
	// A real loop: the ids it does not know come back in its errors.
	e := newLoopEnv(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := e.do(t, tc.method, tc.path, testToken, tc.body)
			got := decodeBody[errorResponse](t, resp)
			if got.Error.Code != tc.wantCode {
				t.Fatalf("code %q, want %q (%s)", got.Error.Code, tc.wantCode, got.Error.Message)
			}
			if len(got.Error.Message) > 300 || !strings.Contains(got.Error.Message, "…(") {
				t.Fatalf("message of %d bytes, want the id cut with its length: %.300s", len(got.Error.Message), got.Error.Message)
			}
		})
	}
}

func TestSubmitRefusesUnknownGrantsAndDuplicateKeys(t *testing.T) {
	cases := []struct {
		name, body string
		wantStatus int
		wantCode   string
	}{
		{"unknown grant", `{"source":"1","grants":["tool","fs"]}`, http.StatusUnprocessableEntity, "unknown_grant"},
		{"grant in another case", `{"source":"1","grants":["Tool"]}`, http.StatusUnprocessableEntity, "unknown_grant"},
		{"duplicate key", `{"source":"1","source":"2"}`, http.StatusBadRequest, "duplicate_key"},
		{"duplicate key folded", `{"source":"1","Source":"2"}`, http.StatusBadRequest, "duplicate_key"},
		{"duplicate key escaped", `{"source":"1","\u0073ource":"2"}`, http.StatusBadRequest, "duplicate_key"},
		{"duplicate grants key", `{"source":"1","grants":[],"grants":["tool"]}`, http.StatusBadRequest, "duplicate_key"},
		{"known grants", `{"source":"1","grants":["tool","assert"]}`, http.StatusCreated, ""},
		{"same key in nested values", `{"source":"{\"a\":1,\"a\":2}","grants":[]}`, http.StatusCreated, ""},
	}
	e := newAPIEnv(t, nil)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := e.do(t, http.MethodPost, "/v1/sessions", testToken, tc.body)
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.wantStatus)
			}
			if tc.wantCode == "" {
				return
			}
			if got := decodeBody[errorResponse](t, resp); got.Error.Code != tc.wantCode {
				t.Fatalf("code %q, want %q (%s)", got.Error.Code, tc.wantCode, got.Error.Message)
			}
		})
	}
	if n := len(e.backend.subs); n != 2 {
		t.Fatalf("%d submissions reached the backend, want 2", n)
	}
}
