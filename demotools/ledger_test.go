package demotools_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/splashfabric/splashfabric/demotools"
	"github.com/splashfabric/splashfabric/internal/natstest"
	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/toolspec"
	"github.com/splashfabric/splashfabric/workeragent"
)

func newJetStream(t *testing.T) jetstream.JetStream {
	t.Helper()
	srv := natstest.Start(t)
	js, err := jetstream.New(srv.Connect())
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// ledgerHandler registers demo.ledger on a recording registrar and returns
// its handler.
func ledgerHandler(t *testing.T, js jetstream.JetStream) workeragent.Handler {
	t.Helper()
	var h workeragent.Handler
	r := handleFunc(func(name string, got workeragent.Handler, _ ...workeragent.ToolOption) error {
		if name != demotools.Ledger {
			t.Fatalf("registered %q", name)
		}
		h = got
		return nil
	})
	if err := demotools.RegisterLedger(r, js, 1); err != nil {
		t.Fatal(err)
	}
	return h
}

type handleFunc func(string, workeragent.Handler, ...workeragent.ToolOption) error

func (f handleFunc) HandleTool(t *toolspec.Tool, h workeragent.Handler, o ...workeragent.ToolOption) error {
	return f(t.Name(), h, o...)
}

func ledgerCall(key string) *workeragent.Call {
	return &workeragent.Call{
		Tool: demotools.Ledger, RequestID: "req-" + key, IdempotencyKey: key,
		Input: protocol.TextPayload(""), Attempt: 1, AttemptLimit: 1, Stream: &workeragent.ChunkWriter{},
	}
}

func TestLedgerCounts(t *testing.T) {
	js := newJetStream(t)
	ctx := t.Context()
	got, err := demotools.LedgerCounts(ctx, js)
	if err != nil || len(got) != 0 {
		t.Fatalf("before any run: %v, %v", got, err)
	}
	h := ledgerHandler(t, js)
	// Keys with bytes a KV key cannot hold still count apart.
	runs := map[string]int{"idem-a": 1, "sess/op 7:attempt*": 3, "ünï": 2}
	for key, n := range runs {
		for i := 1; i <= n; i++ {
			out, err := h.HandleCall(ctx, ledgerCall(key))
			if err != nil {
				t.Fatalf("run %d of %q: %v", i, key, err)
			}
			if got := out.Payload().Text; got != strconv.Itoa(i) {
				t.Fatalf("run %d of %q answered %q", i, key, got)
			}
		}
	}
	got, err = demotools.LedgerCounts(ctx, js)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]uint64{}
	for k, n := range runs {
		want[k] = uint64(n)
	}
	if !maps.Equal(got, want) {
		t.Fatalf("counts %v, want %v", got, want)
	}
}

// TestLedgerConcurrent races increments of one key from handlers that
// share nothing but the bucket, as separate workers would: the CAS loop
// must lose no update.
func TestLedgerConcurrent(t *testing.T) {
	js := newJetStream(t)
	const workers, each = 8, 5
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for w := range workers {
		h := ledgerHandler(t, js)
		wg.Go(func() {
			for i := range each {
				if _, err := h.HandleCall(t.Context(), ledgerCall("shared")); err != nil {
					errs <- fmt.Errorf("worker %d run %d: %w", w, i, err)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	got, err := demotools.LedgerCounts(t.Context(), js)
	if err != nil {
		t.Fatal(err)
	}
	if got["shared"] != workers*each {
		t.Fatalf("count %d, want %d", got["shared"], workers*each)
	}
}

func TestLedgerErrors(t *testing.T) {
	if err := demotools.RegisterLedger(handleFunc(func(string, workeragent.Handler, ...workeragent.ToolOption) error {
		t.Fatal("registered without JetStream")
		return nil
	}), nil, 1); !errors.Is(err, demotools.ErrNeedsJetStream) {
		t.Fatalf("nil JetStream: %v", err)
	}

	js := newJetStream(t)
	kv, err := js.CreateKeyValue(t.Context(), jetstream.KeyValueConfig{Bucket: demotools.LedgerBucket})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.PutString(t.Context(), "foreign", "not json"); err != nil {
		t.Fatal(err)
	}
	if _, err := demotools.LedgerCounts(t.Context(), js); !errors.Is(err, demotools.ErrLedgerCorrupt) {
		t.Fatalf("corrupt entry: %v", err)
	}

	ctx, cancel := context.WithCancelCause(t.Context())
	cancel(workeragent.ErrDraining)
	if _, err := ledgerHandler(t, js).HandleCall(ctx, ledgerCall("k")); err == nil {
		t.Fatal("ran with a cancelled context")
	}
}
