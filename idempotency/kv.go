package idempotency

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/splashfabric/splashfabric/internal/recordauth"
	"github.com/splashfabric/splashfabric/protocol"
)

// Defaults of KVConfig.
const (
	// BucketName is the KV bucket of the journal.
	BucketName = "splash_idempotency"
	// DefaultTTL is the dedupe horizon when KVConfig gives none: a record
	// lives this long after its last write.
	DefaultTTL = 24 * time.Hour
)

// maxRounds bounds how often Begin or Store re-reads after losing a
// compare-and-set. Every lost round means another writer made progress on
// the same key, so a handful is plenty; beyond that ErrContended.
const maxRounds = 8

// payloadHeadroom is kept free under the connection's max payload for the
// headers a KV write carries (expected last sequence, message id).
const payloadHeadroom = 1 << 10

// KVConfig is the server-side shape of the journal's bucket and the bound
// on what it stores.
type KVConfig struct {
	// Bucket defaults to BucketName.
	Bucket string
	// TTL is the dedupe horizon: how long after its last write a record
	// (and so a stored result) is kept. Defaults to DefaultTTL.
	TTL time.Duration
	// Replicas of the bucket's stream; defaults to 1.
	Replicas int
	// MaxResultBytes bounds Result.Size; defaults to DefaultMaxResultBytes.
	MaxResultBytes int
	// Clock measures leases; defaults to time.Now.
	Clock func() time.Time
	// Key is the key ring of the pool the journal belongs to (or a
	// single frame key). When set, every record is sealed with a key
	// derived from its current key for the journal and bound to its
	// storage key, and every record read is verified with the key that
	// sealed it: one that fails (a write by a NATS client without the
	// key, a record sealed with a key the ring lacks, or one stored
	// before sealing) is refused with ErrRecordRejected and reported to
	// OnReject, never replayed. Nil or the zero key stores records
	// unsealed; every process the project ships sets it.
	Key protocol.Keys
	// OnReject hears of every record refused for failing
	// authentication, with the reason ("unsigned" or "bad_tag"). It runs
	// on the caller's goroutine and must not block.
	OnReject func(reason string)
}

func (c KVConfig) withDefaults() (KVConfig, error) {
	if c.Bucket == "" {
		c.Bucket = BucketName
	}
	if c.TTL == 0 {
		c.TTL = DefaultTTL
	}
	if c.Replicas == 0 {
		c.Replicas = 1
	}
	if c.MaxResultBytes == 0 {
		c.MaxResultBytes = DefaultMaxResultBytes
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
	switch {
	case c.TTL < 0:
		return c, fmt.Errorf("%w: ttl %v", ErrInvalidConfig, c.TTL)
	case c.Replicas < 0 || c.Replicas > 5:
		return c, fmt.Errorf("%w: replicas %d", ErrInvalidConfig, c.Replicas)
	case c.MaxResultBytes < 0:
		return c, fmt.Errorf("%w: max result bytes %d", ErrInvalidConfig, c.MaxResultBytes)
	}
	return c, nil
}

// KVJournal is the Journal on a JetStream key-value bucket. The bucket
// keeps one revision per key (History 1) on file storage; the record of
// an idempotency key lives under StorageKey(key), JSON encoded and, with
// KVConfig.Key, sealed (see there). Every write is kv.Create or kv.Update
// with the expected revision, so the server arbitrates races between
// workers.
type KVJournal struct {
	kv        jetstream.KeyValue
	bucket    string
	clock     func() time.Time
	maxResult int
	maxValue  int
	// seal is zero when records are stored unsealed.
	seal     recordauth.Key
	onReject func(reason string)
}

var _ Journal = (*KVJournal)(nil)

// NewKV creates the journal's bucket, or binds to it and updates its
// settings if it exists, and returns the journal.
func NewKV(ctx context.Context, js jetstream.JetStream, cfg KVConfig) (*KVJournal, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	var seal recordauth.Key
	if cfg.Key != nil && !cfg.Key.Ring().IsZero() {
		if seal, err = recordauth.Derive(cfg.Key, recordauth.StoreJournal); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
		}
	}
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:      cfg.Bucket,
		Description: "Splash Fabric idempotency journal",
		History:     1,
		TTL:         cfg.TTL,
		Storage:     jetstream.FileStorage,
		Replicas:    cfg.Replicas,
	})
	if err != nil {
		return nil, fmt.Errorf("idempotency: bucket %q: %w", cfg.Bucket, err)
	}
	maxValue := int(js.Conn().MaxPayload()) - payloadHeadroom
	return &KVJournal{kv: kv, bucket: cfg.Bucket, clock: cfg.Clock, maxResult: cfg.MaxResultBytes, maxValue: maxValue,
		seal: seal, onReject: cfg.OnReject}, nil
}

// Bucket returns the name of the journal's KV bucket.
func (j *KVJournal) Bucket() string { return j.bucket }

// Begin implements Journal. A new key costs one write (create); a
// duplicate costs a failed create and a read; a takeover or a re-claim
// after release costs a read and one write (update).
func (j *KVJournal) Begin(ctx context.Context, key, owner string, lease time.Duration) (Claim, error) {
	return j.begin(ctx, "begin", key, owner, lease, decide)
}

// Resume implements Journal. It costs what Begin costs; resuming the
// caller's own record costs a failed create, a read and one write
// (update).
func (j *KVJournal) Resume(ctx context.Context, key, owner string, lease time.Duration) (Claim, error) {
	return j.begin(ctx, "resume", key, owner, lease, decideResume)
}

// begin is Begin or Resume, whichever decision rule they pass.
func (j *KVJournal) begin(ctx context.Context, op, key, owner string, lease time.Duration, rule beginRule) (Claim, error) {
	if err := validateBegin(key, owner, lease); err != nil {
		return Claim{}, err
	}
	var outcome Outcome
	rec, _, err := j.cas(ctx, op, key, func(cur *Record) (Record, bool) {
		now := j.clock()
		if cur == nil {
			outcome = Fresh
			return newRunning(key, owner, lease, now), true
		}
		next, o, write := rule(*cur, owner, lease, now)
		outcome = o
		return next, write
	})
	if err != nil {
		return Claim{}, err
	}
	return Claim{Outcome: outcome, Owner: owner, Lease: lease, Record: rec}, nil
}

// Renew implements Journal: one write (update).
func (j *KVJournal) Renew(ctx context.Context, c Claim) (Claim, error) {
	if err := validateHeld(c); err != nil {
		return Claim{}, err
	}
	next := renewed(c.Record, c.Lease, j.clock())
	rev, err := j.update(ctx, c, next)
	if err != nil {
		return Claim{}, err
	}
	next.Revision = rev
	c.Record = next
	return c, nil
}

// Finish implements Journal: one write (update). The size bound is checked
// before it.
func (j *KVJournal) Finish(ctx context.Context, c Claim, r Result) error {
	if err := validateHeld(c); err != nil {
		return err
	}
	if err := validateResult(r, j.maxResult); err != nil {
		return err
	}
	_, err := j.update(ctx, c, finished(c.Record, r, j.clock()))
	return err
}

// Release implements Journal: one write (update). The record stays, marked
// released, so its claim count survives and the next Begin is Fresh.
func (j *KVJournal) Release(ctx context.Context, c Claim) error {
	if err := validateHeld(c); err != nil {
		return err
	}
	_, err := j.update(ctx, c, released(c.Record, j.clock()))
	return err
}

// Store implements Journal. A new key costs one write (create); a key
// whose result is stored costs a refused create and a read; a running or
// released record costs a read and one write (update). The size bound is
// checked before any of them.
func (j *KVJournal) Store(ctx context.Context, key, owner string, r Result) (Record, bool, error) {
	if err := validateStore(key, owner); err != nil {
		return Record{}, false, err
	}
	if err := validateResult(r, j.maxResult); err != nil {
		return Record{}, false, err
	}
	return j.cas(ctx, "store", key, func(cur *Record) (Record, bool) {
		return storedOver(cur, key, owner, r, j.clock())
	})
}

// cas applies step to the stored record of key (nil: believed absent)
// and writes the record it returns with a compare-and-set: a create when
// absent, else an update over the revision read. A lost round means
// another writer got there first, so the record is re-read and step
// applied again. When step returns write false, cas returns cur
// unwritten, with wrote false.
func (j *KVJournal) cas(ctx context.Context, op, key string, step func(cur *Record) (next Record, write bool)) (rec Record, wrote bool, err error) {
	sk := StorageKey(key)
	var cur *Record // nil: believed absent, so try to create
	for range maxRounds {
		next, write := step(cur)
		if !write {
			return *cur, false, nil
		}
		b, err := j.encode(sk, next)
		if err != nil {
			return Record{}, false, err
		}
		var rev uint64
		if cur == nil {
			rev, err = j.kv.Create(ctx, sk, b)
		} else {
			rev, err = j.kv.Update(ctx, sk, b, cur.Revision)
		}
		if err == nil {
			next.Revision = rev
			return next, true, nil
		}
		if !isConflict(err) {
			return Record{}, false, fmt.Errorf("idempotency: %s %q: %w", op, key, err)
		}
		if cur, err = j.read(ctx, key, sk); err != nil {
			return Record{}, false, err
		}
	}
	return Record{}, false, fmt.Errorf("%w: %q", ErrContended, key)
}

// Get implements Journal.
func (j *KVJournal) Get(ctx context.Context, key string) (Record, error) {
	if key == "" {
		return Record{}, fmt.Errorf("%w: %q", ErrInvalidKey, key)
	}
	r, err := j.read(ctx, key, StorageKey(key))
	if err != nil {
		return Record{}, err
	}
	if r == nil {
		return Record{}, fmt.Errorf("%w: %q", ErrNotFound, key)
	}
	return *r, nil
}

// read returns the stored record, or nil if there is none.
func (j *KVJournal) read(ctx context.Context, key, sk string) (*Record, error) {
	e, err := j.kv.Get(ctx, sk)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("idempotency: get %q: %w", key, err)
	}
	value := e.Value()
	if !j.seal.IsZero() {
		if value, err = j.seal.Open(sk, value); err != nil {
			if j.onReject != nil {
				j.onReject(recordauth.Reason(err))
			}
			return nil, fmt.Errorf("%w: %q: %w", ErrRecordRejected, key, err)
		}
	}
	r, err := decodeRecord(value, e.Revision())
	if err != nil {
		return nil, err
	}
	if r.Key != key {
		// Only a foreign writer in the bucket can cause this; refuse to
		// treat its record as ours.
		return nil, fmt.Errorf("%w: %q stored under the key of %q", ErrCorruptRecord, r.Key, key)
	}
	return &r, nil
}

// update writes next over the claim's revision.
func (j *KVJournal) update(ctx context.Context, c Claim, next Record) (uint64, error) {
	sk := StorageKey(c.Record.Key)
	b, err := j.encode(sk, next)
	if err != nil {
		return 0, err
	}
	rev, err := j.kv.Update(ctx, sk, b, c.Revision())
	if isConflict(err) {
		return 0, fmt.Errorf("%w: %q", ErrLeaseLost, c.Record.Key)
	}
	if err != nil {
		return 0, fmt.Errorf("idempotency: update %q: %w", c.Record.Key, err)
	}
	return rev, nil
}

// encode returns r as stored under sk: its JSON, sealed when the journal
// has a key.
func (j *KVJournal) encode(sk string, r Record) ([]byte, error) {
	b, err := encodeRecord(r)
	if err != nil {
		return nil, err
	}
	if !j.seal.IsZero() {
		b = j.seal.Seal(sk, b)
	}
	if len(b) > j.maxValue {
		// JSON escaping can grow a result past the message limit even
		// when Result.Size is within bounds; refuse before writing.
		return nil, fmt.Errorf("%w: encoded record %d bytes, limit %d", ErrResultTooLarge, len(b), j.maxValue)
	}
	return b, nil
}

// isConflict reports a lost compare-and-set. Update maps every
// wrong-last-sequence error to ErrKeyRevisionMismatch; Create wraps it as
// ErrKeyExists, except when it re-creates over a delete marker, where the
// raw API error of a replicated stream (10164) matches neither sentinel's
// code through ErrKeyExists, so both are checked together with the codes.
func isConflict(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists) {
		return true
	}
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) &&
		(apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
			apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}
