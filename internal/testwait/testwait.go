// Package testwait waits in tests for a condition to hold, with a deadline,
// so no test uses a sleep to synchronise.
package testwait

import (
	"testing"
	"time"
)

// DefaultTimeout bounds a wait when the caller gives none; it is long so a
// loaded CI machine does not flake, and a hang still ends.
const DefaultTimeout = 20 * time.Second

// Until polls cond until it returns true, failing the test with what if
// timeout passes first.
func Until(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
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
	select {
	case v := <-ch:
		return v
	case <-time.After(timeout):
		t.Fatalf("timed out after %v waiting for %s", timeout, what)
		var zero T
		return zero
	}
}
