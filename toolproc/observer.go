package toolproc

// Observer is told what the supervisor does, for metrics. Calls come from
// the supervisor's goroutines and must return quickly. *metrics.Worker
// implements it.
type Observer interface {
	// ProcessStarted counts a process start.
	ProcessStarted(tool string)
	// ProcessRestarted counts a start that replaces a lost process.
	ProcessRestarted(tool string)
	// ProcessPoisoned counts a session given up, with one of the Reason
	// constants.
	ProcessPoisoned(tool, reason string)
	// WatchdogStop counts a process stopped because a call's deadline
	// passed while it ran.
	WatchdogStop(tool string)
	// ProcessInFlight reports the calls in flight in the tool's process.
	ProcessInFlight(tool string, n int)
}

type nopObserver struct{}

func (nopObserver) ProcessStarted(string)          {}
func (nopObserver) ProcessRestarted(string)        {}
func (nopObserver) ProcessPoisoned(string, string) {}
func (nopObserver) WatchdogStop(string)            {}
func (nopObserver) ProcessInFlight(string, int)    {}
