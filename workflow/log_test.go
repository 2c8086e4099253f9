package workflow_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/splashfabric/splashfabric/workflow"
)

func TestMemoryLogFencesWriters(t *testing.T) {
	ctx := context.Background()
	m := workflow.NewMemoryLog()
	first := []workflow.Entry{{At: t0, Submitted: &workflow.Submitted{Source: "1"}}}
	if err := m.Append(ctx, "s1", 0, first); err != nil {
		t.Fatal(err)
	}
	// A second owner that read the empty ledger may not write over it.
	second := []workflow.Entry{{At: t0, Submitted: &workflow.Submitted{Source: "2"}}}
	if err := m.Append(ctx, "s1", 0, second); !errors.Is(err, workflow.ErrLedgerConflict) {
		t.Fatalf("err = %v, want ErrLedgerConflict", err)
	}
	if got, err := m.Load(ctx, "s1"); err != nil || len(got) != 1 {
		t.Fatalf("Load = %d entries, %v", len(got), err)
	}
	if _, err := m.Load(ctx, "s2"); !errors.Is(err, workflow.ErrUnknownLedger) {
		t.Fatalf("Load of nothing: %v", err)
	}
	if got, _ := m.Sessions(ctx); !slices.Equal(got, []string{"s1"}) {
		t.Fatalf("Sessions = %v", got)
	}
	if err := m.Remove(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	if got, _ := m.Sessions(ctx); len(got) != 0 {
		t.Fatalf("Sessions after Remove = %v", got)
	}
}

// TestMemoryLogTakesARetriedAppendThatLanded: an Append made again after
// its answer was lost finds its own entries and writes only the rest;
// anything else past its index is still a conflict.
func TestMemoryLogTakesARetriedAppendThatLanded(t *testing.T) {
	entry := func(source string) workflow.Entry {
		return workflow.Entry{At: t0, Submitted: &workflow.Submitted{Source: source}}
	}
	all := []workflow.Entry{entry("1"), entry("2"), entry("3"), entry("4")}
	tests := []struct {
		name       string
		stored     []workflow.Entry // what the first try left, from 0
		retry      []workflow.Entry // what the writer tries again, from 0
		conflict   bool
		wantLoaded int
	}{
		{"all of it landed", all[:3], all[:3], false, 3},
		{"the first part landed", all[:2], all, false, 4},
		{"another writer's entries", []workflow.Entry{all[0], entry("other")}, all[:2], true, 2},
		{"more than the writer meant", all, all[:2], true, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			m := workflow.NewMemoryLog()
			if err := m.Append(ctx, "s1", 0, tt.stored); err != nil {
				t.Fatal(err)
			}
			err := m.Append(ctx, "s1", 0, tt.retry)
			if tt.conflict != errors.Is(err, workflow.ErrLedgerConflict) || (!tt.conflict && err != nil) {
				t.Fatalf("retried Append = %v, want conflict %v", err, tt.conflict)
			}
			if got, err := m.Load(ctx, "s1"); err != nil || len(got) != tt.wantLoaded {
				t.Fatalf("Load = %d entries, %v; want %d", len(got), err, tt.wantLoaded)
			}
		})
	}
}
