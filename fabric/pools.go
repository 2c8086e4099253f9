package fabric

import (
	"fmt"

	"github.com/splashfabric/splashfabric/protocol"

	"github.com/splashfabric/splashfabric/internal/clip"
)

// A pool is the set of workers that serve a group of tools (a tool alone,
// by default) under one NATS identity and one key ring: what one pool's
// credentials reach, no other pool's do. The host holds every pool's ring;
// a pool holds only its own (docs/topology.md, "Pools").

// JournalBucketPrefix starts the name of every idempotency journal bucket:
// the shared one (a worker that names no pool) and each pool's
// (JournalBucket).
const JournalBucketPrefix = "splash_idempotency"

// PoolToken is the one token naming pool in bucket names, inbox prefixes
// and NATS permissions; like ToolToken it is injective over legal names.
func PoolToken(pool string) string { return ConsumerName(pool) }

// JournalBucket is the idempotency journal bucket of pool's workers,
// splash_idempotency_<pool token>, which no other pool may read or write;
// "" (no pool) is the shared bucket splash_idempotency.
func JournalBucket(pool string) string {
	if pool == "" {
		return JournalBucketPrefix
	}
	return JournalBucketPrefix + "_" + PoolToken(pool)
}

// InboxPrefix is the private inbox prefix of a NATS identity: _INBOX_ and
// the identity (a user name such as host or ops, or PoolIdentity of a
// pool). Every client of the fabric connects with
// nats.CustomInboxPrefix(InboxPrefix(identity)), and its permissions let
// it subscribe under its own prefix only, never to _INBOX.>, so no client
// can read the replies (JetStream acknowledgements, pulled messages,
// reconciliation answers) meant for another.
func InboxPrefix(identity string) string { return "_INBOX_" + identity }

// PoolIdentity is the identity of pool's workers in inbox prefixes and
// server logs: its token.
func PoolIdentity(pool string) string { return PoolToken(pool) }

// PoolCodecs gives a host the codec of each tool's frames: the ring of the
// pool that serves the tool, or the shared ring for a pool that has none of
// its own. Invocations, cancellations and reconciliation requests for a
// tool are sealed (as the host) under its pool's ring, and its answers,
// chunks and reconciliation replies verified under it, so a pool holds no
// key that opens or seals another pool's traffic. It is safe for
// concurrent use: it is immutable after NewPoolCodecs, and poolOf must be
// safe too.
type PoolCodecs struct {
	shared *Codec
	pools  map[string]*Codec
	poolOf func(tool string) string
}

// NewPoolCodecs returns the codecs of shared (the ring of every pool
// without its own) and of pools, by pool name. poolOf names a tool's pool
// (nil: every tool is its own pool). A zero or invalid ring is an error
// wrapping protocol.ErrInvalidKey, naming the pool.
func NewPoolCodecs(shared protocol.Keys, pools map[string]protocol.Keys, poolOf func(tool string) string) (*PoolCodecs, error) {
	c, err := NewCodec(shared)
	if err != nil {
		return nil, err
	}
	p := &PoolCodecs{shared: c, pools: make(map[string]*Codec, len(pools)), poolOf: poolOf}
	for name, keys := range pools {
		if err := protocol.ValidateToolName(name); err != nil {
			return nil, fmt.Errorf("%w: pool %q: %w", protocol.ErrInvalidKey, clip.String(name, clip.Echo), err)
		}
		pc, err := NewCodec(keys)
		if err != nil {
			return nil, fmt.Errorf("pool %q: %w", name, err)
		}
		p.pools[name] = pc
	}
	return p, nil
}

// Pool returns the pool that serves tool.
func (p *PoolCodecs) Pool(tool string) string {
	if p.poolOf == nil {
		return tool
	}
	if pool := p.poolOf(tool); pool != "" {
		return pool
	}
	return tool
}

// ForTool returns the codec of tool's pool.
func (p *PoolCodecs) ForTool(tool string) *Codec {
	if c, ok := p.pools[p.Pool(tool)]; ok {
		return c
	}
	return p.shared
}

// Shared returns the codec of pools without a ring of their own.
func (p *PoolCodecs) Shared() *Codec { return p.shared }

// Own reports whether pool has a ring of its own.
func (p *PoolCodecs) Own(pool string) bool {
	_, ok := p.pools[pool]
	return ok
}
