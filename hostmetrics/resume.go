package hostmetrics

import "github.com/splashfabric/splashfabric/hostloop"

var _ hostloop.ResumeObserver = (*Observer)(nil)

// Resuming sets the gauge of sessions waiting to be brought back from
// their ledgers. It may run on any goroutine.
func (o *Observer) Resuming(pending int) { o.m.SessionsResuming(pending) }

// ResumeFailed counts a session (or an adoption) that could not be
// resumed, by reason. It may run on any goroutine.
func (o *Observer) ResumeFailed(reason string, _ hostloop.SessionID, _ error) {
	o.m.ResumeFailed(reason)
}
