package hostnats

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/hostloop"
	"github.com/splashfabric/splashfabric/internal/recordauth"
	"github.com/splashfabric/splashfabric/protocol"

	"github.com/splashfabric/splashfabric/internal/clip"
)

// leaseKeyPrefix starts the key of an incarnation's lease in the
// splash_sessions bucket.
const leaseKeyPrefix = "l."

// DefaultHostLease is how long a host's lease lasts unrenewed: how long
// its durable sessions wait, after the host was killed, before another
// host adopts them.
const DefaultHostLease = 10 * time.Second

// HostLeases is hostloop.Leases on the splash_sessions bucket: the lease
// of incarnation i is the key l.<i>, a sealed record of its holder and
// when it lapses. Taking one is a compare-and-set on the key's revision,
// so of two hosts that find a lease lapsed only one takes it. Every lease
// taken is renewed each third of its duration until Release or Close; a
// renewal that finds the key changed under it has lost the lease (its
// holder was thought dead) and stops renewing it.
//
// Lapse is judged by the reader's clock against the holder's: hosts'
// clocks must agree to well within the lease. A host that adopts a
// session too early is caught by the ledger's fence, and the workers'
// journals keep its calls from running twice.
//
// Goroutines: one renewer, started here and stopped by Close.
type HostLeases struct {
	kv    jetstream.KeyValue
	seal  recordauth.Key
	lease time.Duration
	now   func() time.Time

	mu   sync.Mutex
	held map[string]heldLease

	done chan struct{}
	wg   sync.WaitGroup
	once sync.Once
}

type heldLease struct {
	holder string
	rev    uint64
}

// leaseRecord is a lease's stored body.
type leaseRecord struct {
	Holder  string    `json:"holder"`
	Expires time.Time `json:"expires"`
}

var (
	_ hostloop.Leases       = (*HostLeases)(nil)
	_ hostloop.LeaseHolders = (*HostLeases)(nil)
)

// NewHostLeases binds to the splash_sessions bucket (fabric.Provision must have
// created it with cfg); lease is how long a lease lasts unrenewed, zero
// picking DefaultHostLease. Its records are sealed with a key derived from
// the host's key ring (or a single frame key), as the archive's are.
func NewHostLeases(ctx context.Context, nc *nats.Conn, cfg fabric.Config, key protocol.Keys, lease time.Duration) (*HostLeases, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if lease == 0 {
		lease = DefaultHostLease
	}
	if lease < 3*time.Second/10 {
		return nil, fmt.Errorf("%w: host lease %v, want at least 300ms", fabric.ErrInvalidConfig, lease)
	}
	seal, err := recordauth.Derive(key, recordauth.StoreSessions)
	if err != nil {
		return nil, fmt.Errorf("%w: host leases: %w", fabric.ErrInvalidConfig, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("hostnats: jetstream: %w", err)
	}
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	kv, err := js.KeyValue(ctx, fabric.BucketSessions)
	if err != nil {
		return nil, fmt.Errorf("hostnats: host leases: bucket %s: %w", fabric.BucketSessions, err)
	}
	h := &HostLeases{kv: kv, seal: seal, lease: lease, now: time.Now, held: make(map[string]heldLease), done: make(chan struct{})}
	h.wg.Add(1)
	go h.renew()
	return h, nil
}

// Take implements hostloop.Leases.
func (h *HostLeases) Take(ctx context.Context, incarnation, holder string) error {
	key, ok := archiveKey(leaseKeyPrefix, incarnation)
	if !ok {
		return fmt.Errorf("%w: %q is not an incarnation", fabric.ErrInvalidConfig, clip.String(incarnation, clip.Echo))
	}
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	cur, rev, err := h.read(ctx, key)
	if err != nil {
		return err
	}
	if cur != nil && cur.Holder != holder && cur.Expires.After(h.now()) {
		return fmt.Errorf("%w: %s is held by %s until %s", hostloop.ErrLeaseHeld, incarnation, cur.Holder, cur.Expires.UTC().Format(time.RFC3339Nano))
	}
	data, err := h.record(key, holder)
	if err != nil {
		return err
	}
	if rev == 0 {
		rev, err = h.kv.Create(ctx, key, data)
	} else {
		rev, err = h.kv.Update(ctx, key, data, rev)
	}
	if err != nil {
		if errors.Is(err, jetstream.ErrKeyExists) || fabric.WrongLastSequence(err) {
			return fmt.Errorf("%w: %s was taken meanwhile", hostloop.ErrLeaseHeld, incarnation)
		}
		return fmt.Errorf("hostnats: lease %s: %w", incarnation, err)
	}
	h.mu.Lock()
	h.held[key] = heldLease{holder: holder, rev: rev}
	h.mu.Unlock()
	return nil
}

// Release implements hostloop.Leases: the key is deleted if this holder
// still has it, so the next Take finds it free.
func (h *HostLeases) Release(ctx context.Context, incarnation string) error {
	key, ok := archiveKey(leaseKeyPrefix, incarnation)
	if !ok {
		return nil
	}
	h.mu.Lock()
	l, ok := h.held[key]
	delete(h.held, key)
	h.mu.Unlock()
	if !ok {
		return nil
	}
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	if err := h.kv.Delete(ctx, key, jetstream.LastRevision(l.rev)); err != nil && !fabric.WrongLastSequence(err) {
		return fmt.Errorf("hostnats: releasing lease %s: %w", incarnation, err)
	}
	return nil
}

// Holder implements hostloop.LeaseHolders.
func (h *HostLeases) Holder(ctx context.Context, incarnation string) (string, error) {
	key, ok := archiveKey(leaseKeyPrefix, incarnation)
	if !ok {
		return "", nil
	}
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	cur, _, err := h.read(ctx, key)
	if err != nil || cur == nil || !cur.Expires.After(h.now()) {
		return "", err
	}
	return cur.Holder, nil
}

// read returns key's record (nil when there is none or it was deleted)
// and the revision to write over (0: create). A record that fails its
// seal counts as lapsed: it cannot hold a session from its real owner.
func (h *HostLeases) read(ctx context.Context, key string) (*leaseRecord, uint64, error) {
	e, err := h.kv.Get(ctx, key)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound), errors.Is(err, jetstream.ErrKeyDeleted):
		return nil, 0, nil
	case err != nil:
		return nil, 0, fmt.Errorf("hostnats: lease %s: %w", key, err)
	}
	body, err := h.seal.Open(key, e.Value())
	if err != nil {
		return nil, e.Revision(), nil
	}
	var rec leaseRecord
	if err := json.Unmarshal(body, &rec); err != nil {
		return nil, e.Revision(), nil
	}
	return &rec, e.Revision(), nil
}

func (h *HostLeases) record(key, holder string) ([]byte, error) {
	body, err := json.Marshal(leaseRecord{Holder: holder, Expires: h.now().Add(h.lease).UTC()})
	if err != nil {
		return nil, err
	}
	return h.seal.Seal(key, body), nil
}

// renew extends every held lease each third of the lease.
func (h *HostLeases) renew() {
	defer h.wg.Done()
	tick := time.NewTicker(h.lease / 3)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
		case <-h.done:
			return
		}
		h.mu.Lock()
		held := make(map[string]heldLease, len(h.held))
		for k, l := range h.held {
			held[k] = l
		}
		h.mu.Unlock()
		for key, l := range held {
			h.renewOne(key, l)
		}
	}
}

// renewOne extends one lease. A renewal that finds the key changed under
// it reads the key before giving the lease up: an earlier renewal whose
// acknowledgement was lost may have landed, and a record this holder wrote
// is still its lease, to be renewed from the revision it stored. Only a
// record of another holder, or none, means the lease was taken.
func (h *HostLeases) renewOne(key string, l heldLease) {
	from := l.rev
	rev, err := h.update(key, l)
	if fabric.WrongLastSequence(err) {
		ctx, cancel := context.WithTimeout(context.Background(), h.lease/3)
		cur, stored, rerr := h.read(ctx, key)
		cancel()
		switch {
		case rerr != nil:
			return
		case cur != nil && cur.Holder == l.holder:
			l.rev = stored
			rev, err = h.update(key, l)
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if cur, ok := h.held[key]; ok && cur.rev == from {
		switch {
		case err == nil:
			h.held[key] = heldLease{holder: l.holder, rev: rev}
		case fabric.WrongLastSequence(err) || errors.Is(err, jetstream.ErrKeyNotFound):
			// Taken by another host: no longer ours to renew.
			delete(h.held, key)
		}
	}
}

// update writes a fresh record of l over the revision l holds.
func (h *HostLeases) update(key string, l heldLease) (uint64, error) {
	data, err := h.record(key, l.holder)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), h.lease/3)
	defer cancel()
	return h.kv.Update(ctx, key, data, l.rev)
}

// Close stops renewing; the leases lapse unless released.
func (h *HostLeases) Close() error {
	h.once.Do(func() {
		close(h.done)
		h.wg.Wait()
	})
	return nil
}
