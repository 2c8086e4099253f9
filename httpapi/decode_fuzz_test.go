package httpapi

import (
	"encoding/json"
	"errors"
	"github.com/splashfabric/splashfabric/httpapi/apiwire"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
)

// FuzzDecodeSubmitRequest feeds request bodies to the decoder of POST
// /v1/sessions: it never panics, what it accepts survives a round trip
// through encoding and decoding unchanged, and what it refuses is refused
// with one of the package's sentinels, so the client gets a 4xx code.
func FuzzDecodeSubmitRequest(f *testing.F) {
	for _, seed := range []string{
		`{"source":"return 1"}`,
		`{"source":"x","grants":["tool","assert"],"tool_call_budget":3,"max_pending":2,"execution_budget_ms":100}`,
		`{"source":"x","grants":null}`,
		`{"source":"x","grants":[]}`,
		`{"source":"1","source":"2"}`,
		`{"source":"1","Source":"2"}`,
		`{"source":"1","\u0073ource":"2"}`,
		`{"source":"\ud83d\ude00 \u0000 <&>"}`,
		`{"sauce":"x"}`,
		`{"source":"x"} {}`,
		`{"source":"x"`,
		`[1,2]`,
		`"x"`,
		``,
		`{"source":1}`,
		`{"tool_call_budget":1e400}`,
		`{"source":"x","grants":[{"a":1,"a":2}]}`,
		`{"source":"` + strings.Repeat("a", 5000) + `"}`,
		"{\"source\":\"\xff\xfe\"}",
		`{"a":{"b":{"c":[[[{}]]]}}}`,
	} {
		f.Add([]byte(seed))
	}
	const limit = 4 << 10
	f.Fuzz(func(t *testing.T, body []byte) {
		var req apiwire.SubmitRequest
		r := httptest.NewRequest(http.MethodPost, "/v1/sessions", strings.NewReader(string(body)))
		err := decodeJSON(httptest.NewRecorder(), r, limit, &req)
		if err != nil {
			if !errors.Is(err, ErrMalformedJSON) && !errors.Is(err, ErrUnknownField) &&
				!errors.Is(err, ErrDuplicateKey) && !errors.Is(err, ErrBodyTooLarge) {
				t.Fatalf("untyped error %v", err)
			}
			if status, _ := codeFor(err); status < 400 || status >= 500 {
				t.Fatalf("%v answers %d", err, status)
			}
			return
		}
		again, err := json.Marshal(req)
		if err != nil {
			t.Fatalf("accepted %q but cannot encode it: %v", body, err)
		}
		var back apiwire.SubmitRequest
		if err := decodeBody(again, int64(len(again)), &back); err != nil {
			t.Fatalf("accepted %q, refused its encoding %s: %v", body, again, err)
		}
		if !reflect.DeepEqual(req, back) {
			t.Fatalf("round trip of %q changed %+v to %+v", body, req, back)
		}
	})
}
