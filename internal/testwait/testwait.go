// Package testwait waits in tests for a condition to hold, with a deadline,
// so no test uses a sleep to synchronise.
package testwait

import (
	"os"
	"strconv"
	"testing"
	"time"
)

// DefaultTimeout bounds a wait when the caller gives none; it is long so a
// loaded CI machine does not flake, and a hang still ends.
const DefaultTimeout = 20 * time.Second

// Slow is the factor every wait's deadline is stretched by on a busy
// machine: SPLASH_TEST_SLOW, a number of at least 1 (1 when unset or not
// a number). A wait ends as soon as its condition holds, so a large
// factor costs a passing test nothing; it only lets a loaded machine
// take longer before a wait is called a failure.
var Slow = slowFactor(os.Getenv("SPLASH_TEST_SLOW"))

func slowFactor(v string) float64 {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 1 {
		return 1
	}
	return f
}

// Scale stretches a deadline by Slow.
func Scale(d time.Duration) time.Duration { return time.Duration(float64(d) * Slow) }

// Until polls cond until it returns true, failing the test with what if
// timeout passes first.
func Until(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	timeout = Scale(timeout)
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		case <-tick.C:
		}
	}
}

// Receive returns the next value from ch, failing the test if none arrives
// within timeout.
func Receive[T any](t testing.TB, timeout time.Duration, what string, ch <-chan T) T {
	t.Helper()
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	timeout = Scale(timeout)
	select {
	case v := <-ch:
		return v
	case <-time.After(timeout):
		t.Fatalf("timed out after %v waiting for %s", timeout, what)
		var zero T
		return zero
	}
}
