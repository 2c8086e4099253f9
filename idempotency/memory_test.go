package idempotency_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/idempotency"
	"github.com/splashfabric/splashfabric/idempotency/journaltest"
)

func TestMemoryTTLForgetsRecords(t *testing.T) {
	ctx := context.Background()
	clock := journaltest.NewClock(journaltest.Epoch)
	m := idempotency.NewMemory(clock.Now, idempotency.WithTTL(time.Hour))
	c, err := m.Begin(ctx, "op", "worker-a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(30 * time.Minute)
	if c, err = m.Renew(ctx, c); err != nil {
		t.Fatal(err)
	}
	clock.Advance(59 * time.Minute) // the renewal restarted the horizon
	if _, err := m.Get(ctx, "op"); err != nil {
		t.Fatalf("Get inside the horizon: %v", err)
	}
	clock.Advance(time.Minute)
	if _, err := m.Get(ctx, "op"); !errors.Is(err, idempotency.ErrNotFound) {
		t.Fatalf("Get past the horizon: %v, want ErrNotFound", err)
	}
	if err := m.Finish(ctx, c, textResult("late")); !errors.Is(err, idempotency.ErrLeaseLost) {
		t.Fatalf("Finish past the horizon: %v, want ErrLeaseLost", err)
	}
}
