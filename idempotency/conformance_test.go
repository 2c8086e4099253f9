package idempotency_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/splashfabric/splashfabric/idempotency"
	"github.com/splashfabric/splashfabric/idempotency/journaltest"
	"github.com/splashfabric/splashfabric/internal/natstest"

	"github.com/splashfabric/splashfabric/internal/testwait"
)

func TestMemoryConformance(t *testing.T) {
	journaltest.RunConformance(t, func(t *testing.T, o journaltest.Options) idempotency.Journal {
		return idempotency.NewMemory(o.Clock, idempotency.WithMaxResultBytes(o.MaxResultBytes))
	})
}

func TestKVConformance(t *testing.T) {
	srv := natstest.Start(t)
	js := newJetStream(t, srv)
	var buckets atomic.Int64
	journaltest.RunConformance(t, func(t *testing.T, o journaltest.Options) idempotency.Journal {
		// A bucket per subtest keeps subtests independent on one server.
		// Sealed, as every shipped worker runs it.
		return newKV(t, js, idempotency.KVConfig{
			Bucket:         fmt.Sprintf("conformance_%d", buckets.Add(1)),
			Clock:          o.Clock,
			MaxResultBytes: o.MaxResultBytes,
			Key:            testFrameKey,
		})
	})
}

func newJetStream(t testing.TB, srv *natstest.Server) jetstream.JetStream {
	t.Helper()
	js, err := jetstream.New(srv.Connect())
	if err != nil {
		t.Fatal(err)
	}
	return js
}

func newKV(t testing.TB, js jetstream.JetStream, cfg idempotency.KVConfig) *idempotency.KVJournal {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Scale(10*time.Second))
	defer cancel()
	j, err := idempotency.NewKV(ctx, js, cfg)
	if err != nil {
		t.Fatalf("NewKV: %v", err)
	}
	return j
}
