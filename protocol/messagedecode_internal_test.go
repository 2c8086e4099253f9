package protocol

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// decodeMessageReference is decodeMessage without its fast path.
func decodeMessageReference(raw []byte) (WorkerMessage, error) {
	m, err := decodeMessageStrict(raw)
	if err != nil {
		return WorkerMessage{}, err
	}
	if err := m.Validate(); err != nil {
		return WorkerMessage{}, err
	}
	return m, nil
}

// checkMessagePathsAgree fails unless the fast path, where it takes a body,
// yields the strict decoder's message, and decodeMessage as a whole gives
// the same message or the same error classes as the strict decoder alone.
func checkMessagePathsAgree(t *testing.T, raw []byte) (fast bool) {
	t.Helper()
	if m, ok := decodeMessageFast(raw); ok {
		fast = true
		strict, err := decodeMessageStrict(raw)
		if err != nil {
			t.Fatalf("fast path took a body the strict decoder refuses (%v):\n%q", err, raw)
		}
		if !reflect.DeepEqual(m, strict) {
			t.Fatalf("paths disagree on %q:\nfast   %#v\nstrict %#v", raw, m, strict)
		}
	}
	got, gotErr := decodeMessage(raw)
	want, wantErr := decodeMessageReference(raw)
	if !reflect.DeepEqual(got, want) || errorClasses(gotErr) != errorClasses(wantErr) {
		t.Fatalf("decodeMessage(%q) = %+v, %v\nreference %+v, %v", raw, got, gotErr, want, wantErr)
	}
	return fast
}

// FuzzDecodeMessagePathsAgree checks decodeMessageFast against the strict
// decoder on every input, seeded with every message of the committed
// corpus, every key the messages have, and the cases of
// TestDecodeMessageFastLeavesOtherSpellingsToTheStrictDecoder.
func FuzzDecodeMessagePathsAgree(f *testing.F) {
	for _, line := range append(committedCorpus(f), sealedLines(f)...) {
		if fr, err := parseLineStrict(line); err == nil {
			f.Add([]byte(fr.Message))
		}
	}
	for _, tc := range declineCases {
		f.Add([]byte(tc.raw))
	}
	f.Fuzz(func(t *testing.T, raw []byte) { checkMessagePathsAgree(t, raw) })
}

// TestDecodeMessageFastKnowsEveryField keeps the readers of messagedecode.go
// in step with the struct tags: fullMessages must set every field, and the
// fast path must read all of them back. A field added to a message type
// fails the first check until fullMessages sets it, then the second until
// the fast path reads it.
func TestDecodeMessageFastKnowsEveryField(t *testing.T) {
	var kinds []MessageKind
	for _, m := range fullMessages() {
		kinds = append(kinds, m.Kind)
		body, _, _ := m.body()
		if path := zeroField(reflect.ValueOf(body).Elem(), string(m.Kind)); path != "" {
			t.Fatalf("fullMessages leaves %s unset", path)
		}
		raw, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if !checkMessagePathsAgree(t, raw) {
			t.Fatalf("fast path declined %s", raw)
		}
		if got, _ := decodeMessageFast(raw); !reflect.DeepEqual(got, m) {
			t.Fatalf("round trip:\n got %#v\nwant %#v", got, m)
		}
	}
	if len(kinds) != len(kindNames) {
		t.Fatalf("fullMessages has kinds %v, the protocol %v", kinds, kindNames)
	}
}

// zeroField returns the path of the first zero field under v, or "".
func zeroField(v reflect.Value, path string) string {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return path
		}
		return zeroField(v.Elem(), path)
	case reflect.Struct:
		for i := range v.NumField() {
			if p := zeroField(v.Field(i), path+"."+v.Type().Field(i).Name); p != "" {
				return p
			}
		}
		return ""
	}
	if v.IsZero() {
		return path
	}
	return ""
}

const chunkBody = `"chunk":{"request_id":"r","sequence":1,"text":"t"}`

// declineCases are bodies for the two paths to agree on; fast says which
// ones the fast path reads itself.
var declineCases = []struct {
	name string
	raw  string
	fast bool
}{
	{"canonical", `{"kind":"chunk",` + chunkBody + `}`, true},
	{"whitespace everywhere", " {\n\t\"kind\" : \"chunk\" , \"chunk\" : { \"request_id\" : \"r\" , \"sequence\" : 1 } } \r\n", true},
	{"keys in any order", `{` + chunkBody + `,"kind":"chunk"}`, true},
	{"escapes in a string", `{"kind":"chunk","chunk":{"request_id":"r","sequence":1,"text":"\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00\u003c"}}`, true},
	{"escaped kind", `{"kind":"ch\u0075nk",` + chunkBody + `}`, true},
	{"unknown kind", `{"kind":"admin",` + chunkBody + `}`, true},
	{"negative zero int", `{"kind":"invoke","invoke":{"request_id":"r","tool":"t","input":{"format":"text"},"attempt":1,"attempt_limit":1,"idempotency_key":"k","output_limit":-0}}`, true},
	{"raw json of every kind", `{"kind":"result","result":{"request_id":"r","attempt":1,"status":"succeeded","payload":{"format":"json","json":[{"a":-0.5E+3},"\u0000",true,false,null,[]]}}}`, true},
	{"raw json null", `{"kind":"result","result":{"request_id":"r","attempt":1,"status":"succeeded","payload":{"format":"json","json":null}}}`, true},
	{"raw json with invalid utf-8", "{\"kind\":\"result\",\"result\":{\"request_id\":\"r\",\"attempt\":1,\"status\":\"succeeded\",\"payload\":{\"format\":\"json\",\"json\":\"\xff\"}}}", true},
	{"empty object", `{}`, true},
	{"int at its limits", `{"kind":"invoke","invoke":{"request_id":"r","tool":"t","input":{"format":"text"},"call_index":18446744073709551615,"attempt":4294967295,"attempt_limit":4294967295,"idempotency_key":"k","output_limit":9223372036854775807,"deadline_millis":9223372036854775807}}`, true},

	{"case-folded key", `{"KIND":"chunk",` + chunkBody + `}`, false},
	{"kelvin sign key", `{"\u212aind":"chunk",` + chunkBody + `}`, false},
	{"escaped key", `{"k\u0069nd":"chunk",` + chunkBody + `}`, false},
	{"duplicate key", `{"kind":"cancel","kind":"chunk",` + chunkBody + `}`, false},
	{"duplicate object", `{"kind":"chunk",` + chunkBody + `,"chunk":{"text":"u"}}`, false},
	{"unknown field", `{"kind":"chunk",` + chunkBody + `,"admin":true}`, false},
	{"unknown nested field", `{"kind":"chunk","chunk":{"request_id":"r","sequence":1,"x":1}}`, false},
	{"null payload", `{"kind":"chunk","chunk":null}`, false},
	{"null string", `{"kind":"chunk","chunk":{"request_id":null,"sequence":1}}`, false},
	{"null message", `null`, false},
	{"negative zero uint", `{"kind":"chunk","chunk":{"request_id":"r","sequence":-0}}`, false},
	{"uint32 overflows", `{"kind":"cancel_disposition","cancel_disposition":{"request_id":"r","attempt":4294967296,"disposition":"too_late"}}`, false},
	{"int64 overflows", `{"kind":"result","result":{"request_id":"r","attempt":1,"status":"retry_rate_limited","retry_after_millis":9223372036854775808}}`, false},
	{"int64 at its minimum", `{"kind":"result","result":{"request_id":"r","attempt":1,"status":"failed","error":"e","retry_after_millis":-9223372036854775808}}`, true},
	{"fraction", `{"kind":"chunk","chunk":{"request_id":"r","sequence":1.0}}`, false},
	{"exponent", `{"kind":"chunk","chunk":{"request_id":"r","sequence":1e0}}`, false},
	{"string for a number", `{"kind":"chunk","chunk":{"request_id":"r","sequence":"1"}}`, false},
	{"number for a string", `{"kind":"chunk","chunk":{"request_id":7,"sequence":1}}`, false},
	{"bool for an object", `{"kind":"chunk","chunk":true}`, false},
	{"lone high surrogate", `{"kind":"chunk","chunk":{"request_id":"\ud83d","sequence":1}}`, false},
	{"lone low surrogate", `{"kind":"chunk","chunk":{"request_id":"\ude00x","sequence":1}}`, false},
	{"invalid utf-8", "{\"kind\":\"chunk\",\"chunk\":{\"request_id\":\"r\xff\",\"sequence\":1}}", false},
	{"invalid utf-8 after an escape", "{\"kind\":\"chunk\",\"chunk\":{\"request_id\":\"\\n\xc3\",\"sequence\":1}}", false},
	{"control byte in a string", "{\"kind\":\"chunk\",\"chunk\":{\"request_id\":\"\x01\",\"sequence\":1}}", false},
	{"bad escape", `{"kind":"chunk","chunk":{"request_id":"\x41","sequence":1}}`, false},
	{"trailing data", `{"kind":"chunk",` + chunkBody + `} {}`, false},
	{"trailing comma", `{"kind":"chunk",` + chunkBody + `,}`, false},
	{"truncated", `{"kind":"chunk",` + chunkBody, false},
	{"byte order mark", "\ufeff{\"kind\":\"chunk\"," + chunkBody + "}", false},
	{"deep raw json", `{"kind":"result","result":{"request_id":"r","attempt":1,"status":"succeeded","payload":{"format":"json","json":` +
		strings.Repeat("[", 2*maxLexDepth) + strings.Repeat("]", 2*maxLexDepth) + `}}}`, false},
	{"raw json invalid", `{"kind":"result","result":{"request_id":"r","attempt":1,"status":"succeeded","payload":{"format":"json","json":[01]}}}`, false},
}

func TestDecodeMessageFastLeavesOtherSpellingsToTheStrictDecoder(t *testing.T) {
	for _, tc := range declineCases {
		t.Run(tc.name, func(t *testing.T) {
			if fast := checkMessagePathsAgree(t, []byte(tc.raw)); fast != tc.fast {
				t.Fatalf("fast path took it: %v, want %v", fast, tc.fast)
			}
		})
	}
}
