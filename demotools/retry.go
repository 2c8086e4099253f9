package demotools

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/splashfabric/splashfabric/workeragent"
)

// flaky fails transiently on its first N attempts, N read from its input,
// and then answers "ok after N". The decision rests on Call.Attempt alone,
// which the host numbers, so the outcome is the same whichever worker
// picks up which attempt.
func flaky(_ context.Context, call *workeragent.Call) (workeragent.Output, error) {
	n, err := parseCount(call.Input.Text)
	if err != nil {
		return workeragent.Output{}, workeragent.Permanent(err)
	}
	if uint64(call.Attempt) <= n {
		return workeragent.Output{}, workeragent.Retryable(
			fmt.Errorf("demo failure on attempt %d of the first %d", call.Attempt, n))
	}
	return workeragent.Result(fmt.Sprintf("ok after %d", n)), nil
}

// ratelimited rejects its first attempt as rate limited, asking the host to
// wait the duration in its input, and succeeds on every later attempt.
func ratelimited(_ context.Context, call *workeragent.Call) (workeragent.Output, error) {
	d, err := parseDuration(call.Input.Text)
	if err != nil {
		return workeragent.Output{}, workeragent.Permanent(err)
	}
	if call.Attempt <= 1 {
		return workeragent.Output{}, workeragent.RateLimited(d, fmt.Errorf("demo rate limit, retry after %v", d))
	}
	return workeragent.Result(fmt.Sprintf("ok after rate limit of %v", d)), nil
}

// parseCount reads a non-negative decimal count.
func parseCount(s string) (uint64, error) {
	n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 32)
	if err != nil {
		return 0, fmt.Errorf("%w: want a count such as \"2\", got %q", ErrInvalidInput, s)
	}
	return n, nil
}
