package hostnats

import (
	"context"
	"time"
)

// defaultTimeout bounds a network call whose context has no deadline.
const defaultTimeout = 10 * time.Second

// withDefaultTimeout gives ctx a deadline if it has none, as the jetstream
// package does, so a call cannot hang on a dead server.
func withDefaultTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, defaultTimeout)
}
