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
