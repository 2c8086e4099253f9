package hostnats

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/internal/natstest"
	"github.com/splashfabric/splashfabric/protocol"

	"github.com/splashfabric/splashfabric/workflow"

	"github.com/splashfabric/splashfabric/internal/testwait"
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

// TestAppendBatchIsOneAtomicBatch: the appends of several sessions whose
// tails the log knows (or that start their ledgers) go in one atomic
// batch, not one by one.
func TestAppendBatchIsOneAtomicBatch(t *testing.T) {
	srv := natstest.Start(t)
	nc := srv.Connect()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Scale(30*time.Second))
	defer cancel()
	cfg := fabric.DefaultConfig()
	if err := fabric.Provision(ctx, js, cfg); err != nil {
		t.Fatal(err)
	}
	key, err := protocol.GenerateSessionKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	l, err := NewLedgerLog(ctx, nc, cfg, key)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	entries := []workflow.Entry{
		{At: at, Submitted: &workflow.Submitted{Source: "1"}},
		{At: at, Applied: &workflow.Applied{Kind: workflow.InputExpire}},
	}
	var writes []workflow.SessionAppend
	for i := range 4 {
		writes = append(writes, workflow.SessionAppend{Session: fmt.Sprintf("s-h1-%d", i), From: 0, Entries: entries[:1]})
	}
	for _, err := range l.AppendBatch(ctx, writes) {
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := range writes {
		writes[i].From, writes[i].Entries = 1, entries[1:]
	}
	for _, err := range l.AppendBatch(ctx, writes) {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := l.batched.Load(); n != 8 {
		t.Fatalf("%d of 8 appends went in atomic batches", n)
	}
	for _, w := range writes {
		got, err := l.Load(ctx, w.Session)
		if err != nil || len(got) != 2 {
			t.Fatalf("%s: %d entries, %v", w.Session, len(got), err)
		}
	}
}
