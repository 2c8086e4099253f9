package fabric

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// PoolState is what the server counts for a tool's pool consumer.
type PoolState struct {
	// Pending: invocations in the stream never delivered.
	Pending uint64
	// AckPending: delivered to a worker, not yet acked.
	AckPending int
	// Redelivered: of AckPending, those delivered more than once.
	Redelivered int
	// Waiting: pull requests of idle workers waiting for work.
	Waiting int
}

// ReadPoolState reads tool's pool consumer on SPLASH_INVOKE; ok is false
// when no pool has bound the tool yet.
func ReadPoolState(ctx context.Context, js jetstream.JetStream, tool string) (p PoolState, ok bool, err error) {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	c, err := js.Consumer(ctx, StreamInvoke, ConsumerName(tool))
	switch {
	case errors.Is(err, jetstream.ErrConsumerNotFound):
		return PoolState{}, false, nil
	case err != nil:
		return PoolState{}, false, fmt.Errorf("fabric: consumer of %q: %w", tool, err)
	}
	info := c.CachedInfo()
	return PoolState{Pending: info.NumPending, AckPending: info.NumAckPending, Redelivered: info.NumRedelivered, Waiting: info.NumWaiting}, true, nil
}
