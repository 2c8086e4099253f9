package journaltest

import (
	"sync"
	"time"
)

// Clock is a manual clock that a test advances; it is safe for concurrent
// use because journals read it from many goroutines.
type Clock struct {
	mu  sync.Mutex
	now time.Time // guarded by mu
}

// NewClock returns a clock that reads start until advanced.
func NewClock(start time.Time) *Clock { return &Clock{now: start} }

// Now returns the clock's current reading.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}
