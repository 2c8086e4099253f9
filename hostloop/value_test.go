package hostloop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/splashfabric/splashfabric/host"
)

// A finished session's value and error are bounded as the session ends:
// the same status is held in memory, served, and handed to the archive.
func TestSessionValueIsBoundedInMemoryAsInTheArchive(t *testing.T) {
	const limit = 1000
	cases := []struct {
		name, source  string
		wantState     SessionState
		wantErr       error
		wantTruncated bool
	}{
		{"value within the bound", `"v".repeat(900)`, SessionCompleted, nil, false},
		{"value over the bound", `"v".repeat(50000)`, SessionFailed, ErrValueTooLarge, false},
		{"value over the bound once escaped", `"<".repeat(400)`, SessionFailed, ErrValueTooLarge, false},
		{"error over the bound", `throw new Error("e".repeat(50000))`, SessionFailed, nil, true},
		{"error within the bound", `throw new Error("short")`, SessionFailed, nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			arch := newMemArchive()
			l, err := StartLoop(LoopConfig{Transport: newChanTransport(), HostID: "h1", Archive: arch, MaxValueBytes: limit,
				Catalog: func(*host.Runtime) error { return nil }})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(l.Stop)
			first, err := l.Submit(context.Background(), Submission{Source: tc.source})
			if err != nil {
				t.Fatal(err)
			}
			mem, _, err := l.Status(context.Background(), first.ID)
			if err != nil {
				t.Fatal(err)
			}
			stored, ok := arch.record(first.ID)
			if !ok {
				t.Fatal("no archive record")
			}
			for _, s := range []SessionStatus{first, mem, stored} {
				if s.State != tc.wantState || s.Truncated != tc.wantTruncated {
					t.Fatalf("state %s truncated %v, want %s %v", s.State, s.Truncated, tc.wantState, tc.wantTruncated)
				}
				if tc.wantErr != nil && !errors.Is(s.Err, tc.wantErr) {
					t.Fatalf("err %v, want %v", s.Err, tc.wantErr)
				}
				for _, text := range []string{s.Value, s.Error} {
					if b, _ := json.Marshal(text); len(b)-2 > limit {
						t.Fatalf("%d bytes as JSON kept, limit %d", len(b)-2, limit)
					}
				}
				if s.Value != mem.Value || s.Error != mem.Error {
					t.Fatal("the archive holds another value or error than memory")
				}
			}
			if tc.wantTruncated && !strings.HasSuffix(mem.Error, truncatedMark) {
				t.Fatalf("cut error %q is not marked", mem.Error[len(mem.Error)-40:])
			}
		})
	}
}

// Measuring a value stops at the bound, so a huge value costs no more to
// refuse than a value at the bound costs to keep.
func BenchmarkBoundResult(b *testing.B) {
	for _, size := range []int{DefaultMaxValueBytes, 50 << 20} {
		r := &host.EvalResult{Value: strings.Repeat("v", size)}
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			for b.Loop() {
				boundResult(r, DefaultMaxValueBytes)
			}
		})
	}
}
