package demotools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/nats-io/nats.go"
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
//
// A read or write that goes unanswered (the bucket's leader moving during
// a node failover) is tried again until ledgerPatience runs out. An
// unanswered write may still have landed, so the next read checks for
// it: the journal lets one execution at a time run for a key, so an entry
// holding exactly the count that write carried is that write's, and
// counting again would report a duplicated effect that never happened.
func increment(ctx context.Context, kv jetstream.KeyValue, key string) (uint64, error) {
	sk := idempotency.StorageKey(key)
	ctx, cancel := context.WithTimeout(ctx, ledgerPatience)
	defer cancel()
	pause := backoff.NewExponentialBackOff(backoff.WithInitialInterval(50*time.Millisecond), backoff.WithMaxInterval(time.Second))
	var unanswered *ledgerEntry // the last write whose answer was lost
	retry := func(err error) error {
		if !unansweredErr(err) || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(pause.NextBackOff()):
			return nil
		}
	}
	for {
		if ctx.Err() != nil {
			return 0, context.Cause(ctx)
		}
		var e jetstream.KeyValueEntry
		err := bounded(ctx, func(ctx context.Context) (err error) {
			e, err = kv.Get(ctx, sk)
			return err
		})
		var next ledgerEntry
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
			next = ledgerEntry{IdempotencyKey: key, Count: 1}
			err = bounded(ctx, func(ctx context.Context) error {
				_, err := kv.Create(ctx, sk, mustJSON(next))
				return err
			})
		case err != nil:
			if err := retry(err); err != nil {
				return 0, fmt.Errorf("demotools: ledger read: %w", err)
			}
			continue
		default:
			cur, derr := decodeEntry(e.Value())
			if derr != nil {
				return 0, workeragent.Permanent(derr)
			}
			if unanswered != nil && cur == *unanswered {
				return cur.Count, nil
			}
			next = ledgerEntry{IdempotencyKey: key, Count: cur.Count + 1}
			err = bounded(ctx, func(ctx context.Context) error {
				_, err := kv.Update(ctx, sk, mustJSON(next), e.Revision())
				return err
			})
		}
		switch {
		case err == nil:
			return next.Count, nil
		case errors.Is(err, jetstream.ErrKeyRevisionMismatch), errors.Is(err, jetstream.ErrKeyExists):
			continue
		}
		if rerr := retry(err); rerr != nil {
			return 0, fmt.Errorf("demotools: ledger write: %w", rerr)
		}
		unanswered = &next
	}
}

// ledgerPatience bounds how long one demo.ledger call keeps trying a
// bucket that does not answer: longer than a leader election of a
// replicated stream takes.
const ledgerPatience = time.Minute

// ledgerOpTimeout bounds one read or write, so that a request lost with a
// stopping node is asked again well within ledgerPatience.
const ledgerOpTimeout = 2 * time.Second

// bounded runs one KV request under ledgerOpTimeout.
func bounded(ctx context.Context, request func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, ledgerOpTimeout)
	defer cancel()
	return request(ctx)
}

// unansweredErr reports an error that says nothing about the request's
// fate: no answer came in time, or nobody was there to answer.
func unansweredErr(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse)
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
