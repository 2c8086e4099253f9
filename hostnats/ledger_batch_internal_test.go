package hostnats

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/workflow"
)

// TestEncodedBatchIsTheBatchsJSON holds encode to what json.Marshal writes
// for the same ledgerBatch, which is what Load decodes.
func TestEncodedBatchIsTheBatchsJSON(t *testing.T) {
	at := time.Date(2026, 12, 5, 1, 2, 3, 4, time.UTC)
	entries := []workflow.Entry{
		{At: at, Submitted: &workflow.Submitted{Source: "a<b>&\u2028\xff", ExecutionBudget: time.Second, Tools: map[string]string{"b": "1", "a": "2"}}},
		{At: at, Prepared: &workflow.Prepared{Op: 1, Tool: "echo", Input: "x\"y"}},
		{At: at, Applied: &workflow.Applied{Kind: workflow.InputSucceeded, Op: 1, Output: "z"}},
	}
	l := &LedgerLog{maxBody: 1 << 20}
	for _, tc := range []struct {
		name    string
		from    int
		entries []workflow.Entry
	}{
		{"one", 0, entries[:1]},
		{"several", 7, entries},
	} {
		t.Run(tc.name, func(t *testing.T) {
			batches, err := l.split(tc.from, tc.entries)
			if err != nil || len(batches) != 1 {
				t.Fatalf("split: %d batches, %v", len(batches), err)
			}
			want, err := json.Marshal(ledgerBatch{From: tc.from, Entries: tc.entries})
			if err != nil {
				t.Fatal(err)
			}
			if got := batches[0].encode(); !bytes.Equal(got, want) {
				t.Errorf("encode\n%s\nwant\n%s", got, want)
			}
		})
	}
}
