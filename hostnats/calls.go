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

// truncate bounds how much of a hostile input an error repeats.
func truncate(s string) string {
	const max = 64
	if len(s) > max {
		return s[:max] + "..."
	}
	return s
}
