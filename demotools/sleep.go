package demotools

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/splashfabric/splashfabric/workeragent"
)

// sleep waits for the duration in its input ("200ms", "2s") and answers
// "slept <d>". It is the demo of cancellation and deadlines, so how its
// wait ends decides the answer: a cancellation request is acknowledged
// (the wait was the whole effect and it has stopped), an elapsed deadline
// is a permanent failure (another attempt would run out of time as well),
// and a drain returns the context error so the agent hands the call back.
func sleep(ctx context.Context, call *workeragent.Call) (workeragent.Output, error) {
	d, err := parseDuration(call.Input.Text)
	if err != nil {
		return workeragent.Output{}, workeragent.Permanent(err)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return workeragent.Result("slept " + d.String()), nil
	case <-ctx.Done():
	}
	cause := context.Cause(ctx)
	switch {
	case errors.Is(cause, workeragent.ErrCancelRequested):
		return workeragent.Output{}, workeragent.CancelAcknowledged()
	case errors.Is(cause, workeragent.ErrDeadlineElapsed), errors.Is(cause, context.DeadlineExceeded):
		return workeragent.Output{}, workeragent.Permanent(fmt.Errorf("sleep of %v: %w", d, cause))
	default:
		return workeragent.Output{}, cause
	}
}

// parseDuration reads a non-negative Go duration.
func parseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%w: want a duration such as \"200ms\", got %q", ErrInvalidInput, s)
	}
	return d, nil
}
