package idempotency

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/protocol"
)

// referenceEncode is what the journal stored before encodeRecord was
// written by hand; the two must agree byte for byte.
func referenceEncode(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

func TestEncodeRecordMatchesEncodingJSON(t *testing.T) {
	at := time.Date(2030, 1, 2, 3, 4, 5, 600, time.UTC)
	zone := time.FixedZone("", -(7*3600 + 30*60))
	text := protocol.TextPayload("line <1> & \"two\"\n\t\x00\x7f é \u2028\xff")
	rawJSON := protocol.JSONPayload(json.RawMessage(" {\"a\" : [1, 2,\n3], \"h\":\"<&>\"} "))
	empty := protocol.TextPayload("")
	tests := []struct {
		name string
		r    Record
	}{
		{"zero", Record{}},
		{"running", newRunning("op-1", "worker-a/1", time.Minute, at)},
		{"taken over", Record{Key: "k", State: StateRunning, Owner: "b", PreviousOwner: "a", Claims: 2, Takeovers: 1, TakenOver: true,
			LeaseExpiresAt: at.Add(time.Minute), CreatedAt: at, UpdatedAt: at.In(zone)}},
		{"odd key", Record{Key: "ü/\x00\n\"\\\u2029\xc3", State: StateReleased, CreatedAt: at, UpdatedAt: at}},
		{"text result", finished(newRunning("op", "w", time.Minute, at), Result{Status: StatusSucceeded, Payload: &text}, at)},
		{"json result", finished(newRunning("op", "w", time.Minute, at), Result{Status: StatusSucceeded, Payload: &rawJSON}, at)},
		{"empty payload", finished(newRunning("op", "w", time.Minute, at), Result{Status: StatusSucceeded, Payload: &empty}, at)},
		{"failed", finished(newRunning("op", "w", time.Minute, at), Result{Status: StatusFailed, Error: "disk <full>"}, at)},
		{"monotonic clock", newRunning("op", "w", time.Minute, time.Now())},
	}
	for _, tc := range tests {
		want, err := referenceEncode(tc.r)
		if err != nil {
			t.Fatalf("%s: reference: %v", tc.name, err)
		}
		got, err := encodeRecord(tc.r)
		if err != nil {
			t.Fatalf("%s: encodeRecord: %v", tc.name, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, want)
		}
	}
}

func TestEncodeRecordRefusesWhatEncodingJSONRefuses(t *testing.T) {
	bad := protocol.JSONPayload(json.RawMessage(`{"open":`))
	tests := []struct {
		name string
		r    Record
	}{
		{"year past 9999", Record{Key: "k", CreatedAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}},
		{"payload not json", Record{Key: "k", Result: &Result{Status: StatusSucceeded, Payload: &bad}}},
	}
	for _, tc := range tests {
		if _, err := referenceEncode(tc.r); err == nil {
			t.Fatalf("%s: encoding/json accepts it", tc.name)
		}
		if b, err := encodeRecord(tc.r); err == nil {
			t.Errorf("%s: encodeRecord = %s, want an error", tc.name, b)
		}
	}
}

// TestEncodedShapesAreKnown fails when a stored type gains a field, which
// encodeRecord would otherwise silently drop.
func TestEncodedShapesAreKnown(t *testing.T) {
	tests := []struct {
		v    any
		want []string
	}{
		{Record{}, []string{"Key", "State", "Owner", "PreviousOwner", "Claims", "Takeovers", "TakenOver", "LeaseExpiresAt", "CreatedAt", "UpdatedAt", "Result", "Revision"}},
		{Result{}, []string{"Status", "Payload", "Error"}},
		{protocol.WorkerPayload{}, []string{"Format", "Text", "JSON"}},
	}
	for _, tc := range tests {
		typ := reflect.TypeOf(tc.v)
		var got []string
		for i := range typ.NumField() {
			got = append(got, typ.Field(i).Name)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s fields = %v, encodeRecord knows %v: teach it the new ones", typ, got, tc.want)
		}
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", "\"\\/", "\x00\x1f\x7f", "\b\f\n\r\t", "é\u2028\u2029", "\xff\xc3(", strings.Repeat("ü", 9)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := referenceEncode(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendString(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("appendString(%q) = %s, want %s", s, got, want)
		}
	})
}

func BenchmarkEncodeRecord(b *testing.B) {
	at := time.Now()
	p := protocol.TextPayload("ok")
	records := []struct {
		name string
		r    Record
	}{
		{"begin", newRunning("bench/123456", "worker-1/42", time.Minute, at)},
		{"finish", finished(newRunning("bench/123456", "worker-1/42", time.Minute, at), Result{Status: StatusSucceeded, Payload: &p}, at)},
	}
	for _, rc := range records {
		b.Run(rc.name+"/hand", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := encodeRecord(rc.r); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(rc.name+"/encoding_json", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := referenceEncode(rc.r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
