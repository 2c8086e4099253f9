package protocol

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// checkEncodePathsAgree fails unless the fast encoder, where it takes m,
// writes exactly what encoding/json writes, and encodeMessage as a whole
// always does.
func checkEncodePathsAgree(t *testing.T, m *WorkerMessage) (fast bool) {
	t.Helper()
	want, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := appendMessageFast(nil, m); ok {
		fast = true
		if !bytes.Equal(got, want) {
			t.Fatalf("fast encoding differs:\n got %s\nwant %s", got, want)
		}
	}
	got, err := encodeMessage(m)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("encodeMessage = %s, %v\nwant %s", got, err, want)
	}
	return fast
}

// plainMessage returns m with every string made plain and every raw JSON
// value dropped, which is what the fast encoder writes itself.
func plainMessage(m WorkerMessage) WorkerMessage {
	v := reflect.ValueOf(&m).Elem()
	plainFields(v, "m")
	return m
}

func plainFields(v reflect.Value, path string) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			plainFields(v.Elem(), path)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			plainFields(v.Field(i), path+"_"+v.Type().Field(i).Name)
		}
	case reflect.String:
		v.SetString(path)
	case reflect.Slice:
		v.SetZero()
	}
}

// TestEncodeMessageFastKnowsEveryField keeps the writers of
// messageencode.go in step with the struct tags: every field of
// fullMessages (which TestDecodeMessageFastKnowsEveryField keeps complete)
// must come out as encoding/json writes it, so a field the fast path forgot
// fails here.
func TestEncodeMessageFastKnowsEveryField(t *testing.T) {
	for _, full := range fullMessages() {
		m := plainMessage(full)
		fast := checkEncodePathsAgree(t, &m)
		// Reconciliation and stream denials are rare: encoding/json writes them.
		hot := m.Reconcile == nil && m.Reconciled == nil && m.Denied == nil
		if fast != hot {
			t.Errorf("%s: fast path took it = %v, want %v", m.Kind, fast, hot)
		}
	}
}

// TestEncodeMessageFastDeclinesWhatItCannotCopy covers each reason to leave
// a message to encoding/json: the output still matches.
func TestEncodeMessageFastDeclinesWhatItCannotCopy(t *testing.T) {
	text := func(s string) WorkerMessage {
		return ResultMessage(Result{RequestID: "r", Attempt: 1, Status: ResultSucceeded, Payload: &WorkerPayload{Format: FormatText, Text: s}})
	}
	tests := []struct {
		name string
		m    WorkerMessage
	}{
		{"quote", text(`say "hi"`)},
		{"backslash", text(`a\b`)},
		{"newline", text("a\nb")},
		{"html", text("<a href=x>&</a>")},
		{"non-ASCII", text("caf\u00e9 \u2028")},
		{"invalid UTF-8", text("\xff")},
		{"DEL", text("\x7f")},
		{"JSON payload", ResultMessage(Result{RequestID: "r", Attempt: 1, Status: ResultSucceeded, Payload: &WorkerPayload{Format: FormatJSON, JSON: json.RawMessage(`{ "a" : "<" }`)}})},
		{"reconcile", ReconcileMessage(OperationReconcileRequest{SessionID: "s", RequestID: "r", Tool: "t", OperationKey: "k"})},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if checkEncodePathsAgree(t, &tc.m) {
				t.Fatal("fast path took it")
			}
		})
	}
}

// FuzzEncodeMessagePathsAgree decodes each input as the strict decoder
// would and checks both encoders agree on the message it gives.
func FuzzEncodeMessagePathsAgree(f *testing.F) {
	for _, m := range fullMessages() {
		for _, v := range []WorkerMessage{m, plainMessage(m)} {
			raw, err := json.Marshal(v)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(raw)
		}
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		m, err := decodeMessageStrict(raw)
		if err != nil {
			return
		}
		checkEncodePathsAgree(t, &m)
	})
}
