package hostloop

import "time"

// Clock is where the loop, and the runtimes it owns, take time from: the
// system's by default, another in tests that drive time by hand.
type Clock interface {
	Now() time.Time
	// NewTimer returns a stopped-or-running timer as time.NewTimer does.
	NewTimer(d time.Duration) Timer
}

// Timer is the part of *time.Timer the loop uses.
type Timer interface {
	C() <-chan time.Time
	Stop() bool
	Reset(d time.Duration) bool
}

// SystemClock is the wall clock.
func SystemClock() Clock { return systemClock{} }

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

func (systemClock) NewTimer(d time.Duration) Timer { return sysTimer{time.NewTimer(d)} }

type sysTimer struct{ t *time.Timer }

func (t sysTimer) C() <-chan time.Time        { return t.t.C }
func (t sysTimer) Stop() bool                 { return t.t.Stop() }
func (t sysTimer) Reset(d time.Duration) bool { return t.t.Reset(d) }

// sessionClock is the time a session's runtime sees. Within one step of
// the loop every runtime reads the same instant, the one the step began
// at, so what a script saw (Date.now(), a deadline) is what a replay at
// the ledger entry's time sees again. Until its first step ends a session
// reads its own time: the instant it was submitted, or the entry a replay
// is at.
type sessionClock struct {
	own  time.Time
	step *time.Time
}

func (c *sessionClock) Now() time.Time {
	if c.step != nil {
		return *c.step
	}
	return c.own
}

// Set moves a session that does not follow the loop yet (a replay).
func (c *sessionClock) Set(t time.Time) { c.own = t }
