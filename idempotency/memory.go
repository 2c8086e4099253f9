package idempotency

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Memory is a Journal held in process memory. It keeps the same contract
// as the KV journal (compare-and-set on revisions, leases against the
// injected clock, the same size bound) and suits unit tests and single
// process development; it is not durable.
type Memory struct {
	clock     func() time.Time
	maxResult int
	ttl       time.Duration

	mu      sync.Mutex
	lastRev uint64                // guarded by mu; like a stream sequence, shared by all keys
	entries map[string]memoryItem // guarded by mu; by idempotency key
}

type memoryItem struct {
	value    []byte
	revision uint64
	written  time.Time
}

// MemoryOption adjusts a Memory journal.
type MemoryOption func(*Memory)

// WithMaxResultBytes bounds the size of a stored result (see Result.Size).
func WithMaxResultBytes(n int) MemoryOption { return func(m *Memory) { m.maxResult = n } }

// WithTTL drops a record ttl after its last write, as the KV bucket's TTL
// does, measured on the journal's clock. Zero keeps records forever.
func WithTTL(ttl time.Duration) MemoryOption { return func(m *Memory) { m.ttl = ttl } }

// NewMemory returns an empty in-memory journal whose leases are measured
// with clock; a nil clock means time.Now.
func NewMemory(clock func() time.Time, opts ...MemoryOption) *Memory {
	if clock == nil {
		clock = time.Now
	}
	m := &Memory{clock: clock, maxResult: DefaultMaxResultBytes, entries: make(map[string]memoryItem)}
	for _, o := range opts {
		o(m)
	}
	return m
}

var _ Journal = (*Memory)(nil)

// Begin implements Journal.
func (m *Memory) Begin(ctx context.Context, key, owner string, lease time.Duration) (Claim, error) {
	return m.begin(ctx, key, owner, lease, decide)
}

// Resume implements Journal.
func (m *Memory) Resume(ctx context.Context, key, owner string, lease time.Duration) (Claim, error) {
	return m.begin(ctx, key, owner, lease, decideResume)
}

// begin is Begin or Resume, whichever decision rule they pass.
func (m *Memory) begin(ctx context.Context, key, owner string, lease time.Duration, rule beginRule) (Claim, error) {
	if err := validateBegin(key, owner, lease); err != nil {
		return Claim{}, err
	}
	if err := ctx.Err(); err != nil {
		return Claim{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock()
	next, outcome := newRunning(key, owner, lease, now), Fresh
	if cur, ok, err := m.load(key, now); err != nil {
		return Claim{}, err
	} else if ok {
		var write bool
		next, outcome, write = rule(cur, owner, lease, now)
		if !write {
			return Claim{Outcome: outcome, Owner: owner, Lease: lease, Record: cur}, nil
		}
	}
	stored, err := m.store(next, now)
	if err != nil {
		return Claim{}, err
	}
	return Claim{Outcome: outcome, Owner: owner, Lease: lease, Record: stored}, nil
}

// Renew implements Journal.
func (m *Memory) Renew(ctx context.Context, c Claim) (Claim, error) {
	if err := validateHeld(c); err != nil {
		return Claim{}, err
	}
	if err := ctx.Err(); err != nil {
		return Claim{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock()
	cur, err := m.held(c, now)
	if err != nil {
		return Claim{}, err
	}
	stored, err := m.store(renewed(cur, c.Lease, now), now)
	if err != nil {
		return Claim{}, err
	}
	c.Record = stored
	return c, nil
}

// Finish implements Journal.
func (m *Memory) Finish(ctx context.Context, c Claim, r Result) error {
	if err := validateHeld(c); err != nil {
		return err
	}
	if err := validateResult(r, m.maxResult); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock()
	cur, err := m.held(c, now)
	if err != nil {
		return err
	}
	_, err = m.store(finished(cur, r, now), now)
	return err
}

// Release implements Journal.
func (m *Memory) Release(ctx context.Context, c Claim) error {
	if err := validateHeld(c); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock()
	cur, err := m.held(c, now)
	if err != nil {
		return err
	}
	_, err = m.store(released(cur, now), now)
	return err
}

// Store implements Journal.
func (m *Memory) Store(ctx context.Context, key, owner string, r Result) (Record, bool, error) {
	if err := validateStore(key, owner); err != nil {
		return Record{}, false, err
	}
	if err := validateResult(r, m.maxResult); err != nil {
		return Record{}, false, err
	}
	if err := ctx.Err(); err != nil {
		return Record{}, false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock()
	cur, ok, err := m.load(key, now)
	if err != nil {
		return Record{}, false, err
	}
	var prev *Record
	if ok {
		prev = &cur
	}
	next, write := storedOver(prev, key, owner, r, now)
	if !write {
		return next, false, nil
	}
	stored, err := m.store(next, now)
	if err != nil {
		return Record{}, false, err
	}
	return stored, true, nil
}

// Get implements Journal.
func (m *Memory) Get(ctx context.Context, key string) (Record, error) {
	if key == "" {
		return Record{}, fmt.Errorf("%w: %q", ErrInvalidKey, key)
	}
	if err := ctx.Err(); err != nil {
		return Record{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok, err := m.load(key, m.clock())
	if err != nil {
		return Record{}, err
	}
	if !ok {
		return Record{}, fmt.Errorf("%w: %q", ErrNotFound, key)
	}
	return cur, nil
}

// load returns the live record of key. Called with mu held.
func (m *Memory) load(key string, now time.Time) (Record, bool, error) {
	it, ok := m.entries[key]
	if !ok {
		return Record{}, false, nil
	}
	if m.ttl > 0 && !now.Before(it.written.Add(m.ttl)) {
		delete(m.entries, key)
		return Record{}, false, nil
	}
	r, err := decodeRecord(it.value, it.revision)
	return r, err == nil, err
}

// held returns the stored record if it is still at the claim's revision.
// Called with mu held.
func (m *Memory) held(c Claim, now time.Time) (Record, error) {
	cur, ok, err := m.load(c.Record.Key, now)
	if err != nil {
		return Record{}, err
	}
	if !ok || cur.Revision != c.Revision() {
		return Record{}, fmt.Errorf("%w: %q", ErrLeaseLost, c.Record.Key)
	}
	return cur, nil
}

// store writes r under a new revision. Called with mu held.
func (m *Memory) store(r Record, now time.Time) (Record, error) {
	b, err := encodeRecord(r)
	if err != nil {
		return Record{}, err
	}
	m.lastRev++
	m.entries[r.Key] = memoryItem{value: b, revision: m.lastRev, written: now}
	r.Revision = m.lastRev
	return decodeRecord(b, m.lastRev)
}
