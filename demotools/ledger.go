package demotools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/splashfabric/splashfabric/idempotency"
	"github.com/splashfabric/splashfabric/toolspec"
	"github.com/splashfabric/splashfabric/workeragent"
)

// LedgerBucket is the JetStream KV bucket where demo.ledger counts its
// runs.
const LedgerBucket = "splash_effects"

// ledgerEntry is the value stored per idempotency key. The KV key is the
// idempotency package's StorageKey (idempotency keys may hold bytes KV keys
// cannot), so the original key travels in the value for LedgerCounts.
type ledgerEntry struct {
	IdempotencyKey string `json:"idempotency_key"`
	Count          uint64 `json:"count"`
}

// ledger is the demo.ledger handler: one increment per run, so a test
// reading LedgerCounts sees exactly how often the effect happened.
type ledger struct {
	js       jetstream.JetStream
	replicas int

	// mu guards kv. It is held across the bucket's creation, once, so
	// concurrent first calls do not race to create it.
	mu sync.Mutex
	kv jetstream.KeyValue
}

// LedgerBucketConfig is LedgerBucket's configuration with the given
// replicas (below 1 means 1). The counter must survive what the fabric
// survives, so in a cluster it has the fabric's replicas: a bucket on one
// node would fail every call while that node is down.
func LedgerBucketConfig(replicas int) jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{
		Bucket:      LedgerBucket,
		Description: "demo.ledger effect counts by idempotency key",
		Replicas:    max(replicas, 1),
	}
}

// RegisterLedger registers demo.ledger on r: a tool that is deliberately
// not idempotent, which increments a counter keyed by the call's
// idempotency key in bucket LedgerBucket (created on first use with
// LedgerBucketConfig(replicas)) and answers the new count. Run under the
// agent's journal, every key ends at 1 however often the call is
// delivered; a count above 1 is a duplicated effect.
func RegisterLedger(r Registrar, js jetstream.JetStream, replicas int) error {
	def, _ := Definitions().Lookup(Ledger)
	return RegisterLedgerFrom(r, def, js, replicas)
}

// RegisterLedgerFrom is RegisterLedger under def, the definition a
// catalog gives demo.ledger.
func RegisterLedgerFrom(r Registrar, def *toolspec.Tool, js jetstream.JetStream, replicas int) error {
	if js == nil {
		return fmt.Errorf("%w: nil JetStream for %q", ErrNeedsJetStream, Ledger)
	}
	b, _ := lookup(Ledger)
	l := &ledger{js: js, replicas: replicas}
	if err := r.HandleTool(def, workeragent.HandlerFunc(l.handle), workeragent.Concurrency(b.concurrency)); err != nil {
		return fmt.Errorf("demotools: register %q: %w", Ledger, err)
	}
	return nil
}

func (l *ledger) handle(ctx context.Context, call *workeragent.Call) (workeragent.Output, error) {
	kv, err := l.bucket(ctx)
	if err != nil {
		return workeragent.Output{}, err
	}
	n, err := increment(ctx, kv, call.IdempotencyKey)
	if err != nil {
		return workeragent.Output{}, err
	}
	return workeragent.Result(strconv.FormatUint(n, 10)), nil
}

func (l *ledger) bucket(ctx context.Context) (jetstream.KeyValue, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.kv != nil {
		return l.kv, nil
	}
	kv, err := l.js.CreateOrUpdateKeyValue(ctx, LedgerBucketConfig(l.replicas))
	if err != nil {
		return nil, fmt.Errorf("demotools: ledger bucket %q: %w", LedgerBucket, err)
	}
	l.kv = kv
	return kv, nil
}

// increment adds one to key's count with compare-and-set on the entry's
// revision, retrying when another writer got there first. Conflicts are
// matched on ErrKeyRevisionMismatch as well as ErrKeyExists, since
// replicated buckets report a lost Create race differently.
func increment(ctx context.Context, kv jetstream.KeyValue, key string) (uint64, error) {
	sk := idempotency.StorageKey(key)
	for {
		if ctx.Err() != nil {
			return 0, context.Cause(ctx)
		}
		e, err := kv.Get(ctx, sk)
		var next ledgerEntry
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
			next = ledgerEntry{IdempotencyKey: key, Count: 1}
			_, err = kv.Create(ctx, sk, mustJSON(next))
		case err != nil:
			return 0, fmt.Errorf("demotools: ledger read: %w", err)
		default:
			cur, derr := decodeEntry(e.Value())
			if derr != nil {
				return 0, workeragent.Permanent(derr)
			}
			next = ledgerEntry{IdempotencyKey: key, Count: cur.Count + 1}
			_, err = kv.Update(ctx, sk, mustJSON(next), e.Revision())
		}
		switch {
		case err == nil:
			return next.Count, nil
		case errors.Is(err, jetstream.ErrKeyRevisionMismatch), errors.Is(err, jetstream.ErrKeyExists):
			continue
		default:
			return 0, fmt.Errorf("demotools: ledger write: %w", err)
		}
	}
}

// LedgerCounts reads every count demo.ledger has recorded, by idempotency
// key. A missing bucket means nothing ran yet: the map is empty.
func LedgerCounts(ctx context.Context, js jetstream.JetStream) (map[string]uint64, error) {
	counts := make(map[string]uint64)
	kv, err := js.KeyValue(ctx, LedgerBucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return counts, nil
	}
	if err != nil {
		return nil, fmt.Errorf("demotools: ledger bucket %q: %w", LedgerBucket, err)
	}
	w, err := kv.WatchAll(ctx, jetstream.IgnoreDeletes())
	if err != nil {
		return nil, fmt.Errorf("demotools: ledger watch: %w", err)
	}
	defer func() { _ = w.Stop() }()
	for {
		select {
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case e := <-w.Updates():
			if e == nil {
				// The end of the values present when the watch began.
				return counts, nil
			}
			le, err := decodeEntry(e.Value())
			if err != nil {
				return nil, err
			}
			counts[le.IdempotencyKey] = le.Count
		}
	}
}

func decodeEntry(b []byte) (ledgerEntry, error) {
	var e ledgerEntry
	if err := json.Unmarshal(b, &e); err != nil {
		return ledgerEntry{}, fmt.Errorf("%w: %q", ErrLedgerCorrupt, b)
	}
	return e, nil
}

func mustJSON(e ledgerEntry) []byte {
	b, err := json.Marshal(e)
	if err != nil {
		// A struct of a string and an integer always marshals.
		panic(err)
	}
	return b
}
