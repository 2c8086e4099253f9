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
	if err := m.Append(ctx, "s1", 0, first); !errors.Is(err, workflow.ErrLedgerConflict) {
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
