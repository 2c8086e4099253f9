package fabric

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/splashfabric/splashfabric/protocol"

	"github.com/splashfabric/splashfabric/internal/clip"
)

// A cancel record is the host's sealed cancel frame stored under
// CancelKey(pool, request id) in BucketCancel. The host writes it before it
// broadcasts on CancelSubject, so a worker that registers a pulled
// invocation first and then looks the record up cannot miss both.

// CancelBucket opens BucketCancel; Provision must have run.
func CancelBucket(ctx context.Context, js jetstream.JetStream) (jetstream.KeyValue, error) {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	kv, err := js.KeyValue(ctx, BucketCancel)
	if err != nil {
		return nil, fmt.Errorf("fabric: open %s: %w", BucketCancel, err)
	}
	return kv, nil
}

// LookupCancel reports whether the host recorded a cancellation that covers
// inv, a call of a tool of pool: same request, tool and idempotency key,
// and an attempt no earlier than inv's. A record that does not
// authenticate wraps ErrForged and counts as no cancellation for the
// caller to decide on.
func LookupCancel(ctx context.Context, kv jetstream.KeyValue, codec *Codec, pool string, inv protocol.Invoke) (protocol.Cancel, bool, error) {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	entry, err := kv.Get(ctx, CancelKey(pool, inv.RequestID))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return protocol.Cancel{}, false, nil
	}
	if err != nil {
		return protocol.Cancel{}, false, fmt.Errorf("fabric: cancel record of %q: %w", clip.String(inv.RequestID, clip.Echo), err)
	}
	c, err := codec.OpenCancelRecord(entry.Value())
	if err != nil {
		return protocol.Cancel{}, false, err
	}
	if !Covers(c, inv) {
		return c, false, nil
	}
	return c, true, nil
}

// Covers reports whether cancel applies to inv.
func Covers(cancel protocol.Cancel, inv protocol.Invoke) bool {
	return cancel.RequestID == inv.RequestID && cancel.Tool == inv.Tool &&
		cancel.IdempotencyKey == inv.IdempotencyKey && cancel.Attempt >= inv.Attempt
}
