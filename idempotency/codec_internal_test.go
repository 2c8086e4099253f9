package idempotency

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/protocol"
)

// TestEncodeRecordRoundTrips: what a journal stores reads back as the
// record it wrote, payload text stored as written (no HTML escapes).
func TestEncodeRecordRoundTrips(t *testing.T) {
	at := time.Date(2030, 1, 2, 3, 4, 5, 600, time.UTC)
	text := protocol.TextPayload("line <1> & \"two\"\n\t\x00\x7f é \u2028")
	rawJSON := protocol.JSONPayload(json.RawMessage(`{"a":[1,2,3],"h":"<&>"}`))
	tests := []struct {
		name string
		r    Record
	}{
		{"running", newRunning("op-1", "worker-a/1", time.Minute, at)},
		{"taken over", Record{Key: "k", State: StateRunning, Owner: "b", PreviousOwner: "a", Claims: 2, Takeovers: 1, TakenOver: true,
			LeaseExpiresAt: at.Add(time.Minute), CreatedAt: at, UpdatedAt: at}},
		{"text result", finished(newRunning("op", "w", time.Minute, at), Result{Status: StatusSucceeded, Payload: &text}, at)},
		{"json result", finished(newRunning("op", "w", time.Minute, at), Result{Status: StatusSucceeded, Payload: &rawJSON}, at)},
		{"failed", finished(newRunning("op", "w", time.Minute, at), Result{Status: StatusFailed, Error: "disk <full>"}, at)},
	}
	for _, tc := range tests {
		b, err := encodeRecord(tc.r)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if bytes.Contains(b, []byte(`\u003c`)) || bytes.HasSuffix(b, []byte{'\n'}) {
			t.Errorf("%s: stored %s", tc.name, b)
		}
		back, err := decodeRecord(b, 7)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		want := tc.r
		want.Revision = 7
		if !reflect.DeepEqual(back, want) {
			t.Errorf("%s: read back\n%+v\nwant\n%+v", tc.name, back, want)
		}
	}
}

func TestEncodeRecordRefusesWhatJSONCannotStore(t *testing.T) {
	bad := protocol.JSONPayload(json.RawMessage(`{"open":`))
	tests := []struct {
		name string
		r    Record
	}{
		{"year past 9999", Record{Key: "k", CreatedAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}},
		{"payload not json", Record{Key: "k", Result: &Result{Status: StatusSucceeded, Payload: &bad}}},
	}
	for _, tc := range tests {
		if b, err := encodeRecord(tc.r); err == nil {
			t.Errorf("%s: encodeRecord = %s, want an error", tc.name, b)
		}
	}
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
		b.Run(rc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := encodeRecord(rc.r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
