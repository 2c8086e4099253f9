// Package logtest checks an implementation of workflow.Log against the
// contract every one keeps: Append is fenced on the ledger's length, and
// an Append made again after its answer was lost finds its own entries
// and writes only the rest.
package logtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/workflow"
)

// Factory makes an empty store for one case and returns how to open a
// writer on it. Each call opens another writer that has cached nothing,
// as a host that lost an answer and tries again, or a second host, would.
type Factory func(t *testing.T) (open func() workflow.Log)

// t0 is when the entries below happened.
var t0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// Entries are n entries of one writer's history from index 0: a
// submission, then applied answers.
func Entries(n int) []workflow.Entry {
	out := []workflow.Entry{{At: t0, Submitted: &workflow.Submitted{Source: `await tool.start("t", "x")`, Seed: [32]byte{1}}}}
	for i := 1; i < n; i++ {
		out = append(out, applied(i, "out"))
	}
	return out
}

// Other is n entries from index from that Entries never writes: another
// writer's history.
func Other(from, n int) []workflow.Entry {
	var out []workflow.Entry
	for i := from; i < from+n; i++ {
		out = append(out, applied(i, "other"))
	}
	return out
}

func applied(i int, what string) workflow.Entry {
	return workflow.Entry{At: t0.Add(time.Duration(i) * time.Second), Applied: &workflow.Applied{Kind: workflow.InputSucceeded, Op: 1, Output: fmt.Sprint(what, " ", i)}}
}

// RunConformance runs the contract's cases, each on a fresh store.
func RunConformance(t *testing.T, f Factory) {
	t.Run("FencesWriters", func(t *testing.T) { fencesWriters(t, f(t)) })
	t.Run("Rewrites", func(t *testing.T) { rewrites(t, f(t)) })
	t.Run("AppendsInBatches", func(t *testing.T) { appendsInBatches(t, f(t)) })
	all := Entries(4)
	for _, tc := range []struct {
		name       string
		stored     []workflow.Entry // what the first try left, from 0
		retry      []workflow.Entry // what the writer tries again, from 0
		conflict   bool
		wantLoaded int
	}{
		{"AllOfARetryLanded", all[:3], all[:3], false, 3},
		{"TheFirstPartOfARetryLanded", all[:2], all, false, 4},
		{"AnotherWritersEntriesConflict", append(all[:1:1], Other(1, 1)...), all[:2], true, 2},
		{"MoreThanTheWriterMeantConflicts", all, all[:2], true, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			open, ctx := f(t), context.Background()
			if err := open().Append(ctx, "s-h1-1", 0, tc.stored); err != nil {
				t.Fatal(err)
			}
			err := open().Append(ctx, "s-h1-1", 0, tc.retry)
			if tc.conflict != errors.Is(err, workflow.ErrLedgerConflict) || (!tc.conflict && err != nil) {
				t.Fatalf("retried Append = %v, want conflict %v", err, tc.conflict)
			}
			if got, err := open().Load(ctx, "s-h1-1"); err != nil || len(got) != tc.wantLoaded {
				t.Fatalf("Load = %d entries, %v; want %d", len(got), err, tc.wantLoaded)
			}
		})
	}
}

// rewrites: a Log that is a workflow.Rewriter replaces the stored ledger
// with the whole of it, fenced on what is stored; a retry of a rewrite
// that landed is taken; a rewrite over another writer's entries is a
// conflict and changes nothing; appends follow a rewrite.
func rewrites(t *testing.T, open func() workflow.Log) {
	ctx := context.Background()
	rw, ok := open().(workflow.Rewriter)
	if !ok {
		t.Skip("not a workflow.Rewriter")
	}
	all := Entries(6)
	l := open()
	for i := range 3 {
		if err := l.Append(ctx, "s-h1-1", i, all[i:i+1]); err != nil {
			t.Fatal(err)
		}
	}
	if err := rw.Rewrite(ctx, "s-h1-1", 3, all[:5]); err != nil {
		t.Fatal(err)
	}
	if err := open().(workflow.Rewriter).Rewrite(ctx, "s-h1-1", 3, all[:5]); err != nil {
		t.Fatalf("a retried Rewrite that landed: %v", err)
	}
	other := append(slices.Clone(all[:3]), Other(3, 3)...)
	if err := open().(workflow.Rewriter).Rewrite(ctx, "s-h1-1", 3, other); !errors.Is(err, workflow.ErrLedgerConflict) {
		t.Fatalf("a Rewrite over another writer's entries = %v, want ErrLedgerConflict", err)
	}
	if err := open().Append(ctx, "s-h1-1", 5, all[5:]); err != nil {
		t.Fatalf("an Append after a Rewrite: %v", err)
	}
	got, err := open().Load(ctx, "s-h1-1")
	if err != nil || len(got) != 6 {
		t.Fatalf("Load = %d entries, %v; want 6", len(got), err)
	}
	if k, ok := workflow.Landed(got, 0, all); !ok || k != 6 {
		t.Fatalf("the ledger read back is not the one written")
	}
}

// appendsInBatches: a Log that is a workflow.BatchAppender stores the
// appends of several sessions at once, each fenced as Append is: one a
// second writer fenced out answers ErrLedgerConflict and the others land,
// and a batch made again after its answer was lost finds its own entries.
func appendsInBatches(t *testing.T, open func() workflow.Log) {
	ctx := context.Background()
	l := open()
	b, ok := l.(workflow.BatchAppender)
	if !ok {
		t.Skip("not a workflow.BatchAppender")
	}
	all := Entries(3)
	ids := []string{"s-h1-1", "s-h1-2", "s-h1-3"}
	var first []workflow.SessionAppend
	for _, id := range ids {
		first = append(first, workflow.SessionAppend{Session: id, From: 0, Entries: all[:2]})
	}
	for i, err := range b.AppendBatch(ctx, first) {
		if err != nil {
			t.Fatalf("new ledger %s: %v", ids[i], err)
		}
	}
	if err := open().Append(ctx, ids[1], 2, Other(2, 1)); err != nil {
		t.Fatal(err)
	}
	var next []workflow.SessionAppend
	for _, id := range ids {
		next = append(next, workflow.SessionAppend{Session: id, From: 2, Entries: all[2:]})
	}
	errs := b.AppendBatch(ctx, next)
	for i, err := range errs {
		if want := i == 1; want != errors.Is(err, workflow.ErrLedgerConflict) || !want && err != nil {
			t.Fatalf("append to %s after another writer wrote %s: %v", ids[i], ids[1], err)
		}
	}
	again := open().(workflow.BatchAppender).AppendBatch(ctx, []workflow.SessionAppend{next[0], next[2]})
	if again[0] != nil || again[1] != nil {
		t.Fatalf("a batch made again after it landed: %v", again)
	}
	for i, id := range ids {
		got, err := open().Load(ctx, id)
		if err != nil || len(got) != 3 {
			t.Fatalf("Load %s = %d entries, %v", id, len(got), err)
		}
		mine := i != 1
		if k, ok := workflow.Landed(got, 0, all); (ok && k == 3) != mine {
			t.Fatalf("%s holds %v of this writer's entries, want %v", id, ok, mine)
		}
	}
}

// fencesWriters: a second owner that read the ledger empty may not write
// over it; Load, Sessions and Remove see what was written.
func fencesWriters(t *testing.T, open func() workflow.Log) {
	ctx := context.Background()
	first := Entries(1)
	if err := open().Append(ctx, "s-h1-1", 0, first); err != nil {
		t.Fatal(err)
	}
	second := []workflow.Entry{{At: t0, Submitted: &workflow.Submitted{Source: "another"}}}
	if err := open().Append(ctx, "s-h1-1", 0, second); !errors.Is(err, workflow.ErrLedgerConflict) {
		t.Fatalf("a second owner's Append = %v, want ErrLedgerConflict", err)
	}
	l := open()
	if got, err := l.Load(ctx, "s-h1-1"); err != nil || len(got) != 1 || got[0].Submitted.Source != first[0].Submitted.Source {
		t.Fatalf("Load = %+v, %v", got, err)
	}
	if _, err := l.Load(ctx, "s-h1-2"); !errors.Is(err, workflow.ErrUnknownLedger) {
		t.Fatalf("Load of nothing: %v, want ErrUnknownLedger", err)
	}
	if got, err := l.Sessions(ctx); err != nil || !slices.Equal(got, []string{"s-h1-1"}) {
		t.Fatalf("Sessions = %v, %v", got, err)
	}
	if err := l.Remove(ctx, "s-h1-1"); err != nil {
		t.Fatal(err)
	}
	if got, err := open().Sessions(ctx); err != nil || len(got) != 0 {
		t.Fatalf("Sessions after Remove = %v, %v", got, err)
	}
}
