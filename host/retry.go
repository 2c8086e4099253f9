package host

import (
	"fmt"
	"strconv"
)

// RetryClass is the host's reason for retrying an attempt.
type RetryClass int

// Retry classes.
const (
	RetryTransient RetryClass = iota + 1
	RetryRateLimited
)

// String returns "transient" or "rate_limited".
func (c RetryClass) String() string {
	switch c {
	case RetryTransient:
		return "transient"
	case RetryRateLimited:
		return "rate_limited"
	case 0:
		return ""
	}
	return "retry_class(" + strconv.Itoa(int(c)) + ")"
}

// RetryExternalTool schedules the next attempt of a claimed operation and
// returns it directly: same id, input, call index and idempotency key,
// attempt+1, no new budget; the operation stays claimed and never returns
// to the claim queue. It is refused at the attempt bound
// (ErrRetryLimitReached: complete or cancel instead), after the deadline
// (ErrDeadlineElapsed: let ExpireTimedOutTools resolve it) and while
// cancellation is requested (ErrCancellationRequested).
func (r *Runtime) RetryExternalTool(id ExternalToolID, class RetryClass) (ExternalInvocation, error) {
	if class != RetryTransient && class != RetryRateLimited {
		return ExternalInvocation{}, fmt.Errorf("%w: retry class %d", ErrInvalidInput, int(class))
	}
	op, err := r.lookup(id, actRetry)
	if err != nil {
		return ExternalInvocation{}, err
	}
	now := r.clock.Now()
	if op.expired(now) {
		return ExternalInvocation{}, fmt.Errorf("%w: %q", ErrDeadlineElapsed, id.String())
	}
	if op.attempt >= uint32(op.tool.policy.MaxAttempts) {
		return ExternalInvocation{}, fmt.Errorf("%w: %q used %d of %d attempts", ErrRetryLimitReached, id.String(), op.attempt, op.tool.policy.MaxAttempts)
	}
	op.move(Claimed)
	op.attempt++
	r.record(op, AuditRetryScheduled, class.String(), 0, class)
	return r.invocation(op, now), nil
}
