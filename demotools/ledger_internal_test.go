package demotools

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/splashfabric/splashfabric/idempotency"
	"github.com/splashfabric/splashfabric/internal/natstest"
)

// lossyKV is a real bucket whose next write goes unanswered, as during a
// node failover: the write either lands (its answer lost) or never
// reaches the stream (the request lost).
type lossyKV struct {
	jetstream.KeyValue
	drops int  // writes still to go unanswered
	lands bool // whether an unanswered write is applied
}

func (l *lossyKV) write(apply func() (uint64, error)) (uint64, error) {
	if l.drops == 0 {
		return apply()
	}
	l.drops--
	if l.lands {
		if _, err := apply(); err != nil {
			return 0, err
		}
	}
	return 0, nats.ErrTimeout
}

func (l *lossyKV) Create(ctx context.Context, key string, value []byte, opts ...jetstream.KVCreateOpt) (uint64, error) {
	return l.write(func() (uint64, error) { return l.KeyValue.Create(ctx, key, value, opts...) })
}

func (l *lossyKV) Update(ctx context.Context, key string, value []byte, rev uint64) (uint64, error) {
	return l.write(func() (uint64, error) { return l.KeyValue.Update(ctx, key, value, rev) })
}

// TestIncrementUnansweredWrite: a write whose answer is lost counts once,
// whether it landed or not.
func TestIncrementUnansweredWrite(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lands bool
		runs  int // runs of the call before the checked one
	}{
		{name: "first write landed", lands: true},
		{name: "first write lost", lands: false},
		{name: "update landed", lands: true, runs: 1},
		{name: "update lost", lands: false, runs: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := natstest.Start(t)
			js, err := jetstream.New(srv.Connect())
			if err != nil {
				t.Fatal(err)
			}
			ctx := t.Context()
			kv, err := js.CreateKeyValue(ctx, LedgerBucketConfig(1))
			if err != nil {
				t.Fatal(err)
			}
			for range tc.runs {
				if _, err := increment(ctx, kv, "k"); err != nil {
					t.Fatal(err)
				}
			}
			n, err := increment(ctx, &lossyKV{KeyValue: kv, drops: 2, lands: tc.lands}, "k")
			if err != nil {
				t.Fatal(err)
			}
			if want := uint64(tc.runs + 1); n != want {
				t.Fatalf("count = %d, want %d", n, want)
			}
			e, err := kv.Get(ctx, idempotency.StorageKey("k"))
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := decodeEntry(e.Value()); got.Count != uint64(tc.runs+1) {
				t.Fatalf("stored count = %d, want %d", got.Count, tc.runs+1)
			}
		})
	}
}
