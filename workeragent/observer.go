package workeragent

import (
	"errors"
	"time"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/toolproc"
)

// Observer is told what the agent does, per tool, as it happens: the
// agent calls it rather than leaving a poller to read Stats, so every
// count carries its tool. Calls come from the agent's goroutines and must
// return quickly. *metrics.Worker implements it.
type Observer interface {
	// The supervisors of process tools report through the same observer.
	toolproc.Observer
	// Redelivered counts an invocation the stream delivered again.
	Redelivered(tool string)
	// DedupeHit counts an invocation answered from the journal.
	DedupeHit(tool string)
	// AuthFailure counts an invocation or cancel frame refused for its
	// authentication, with one of the reasons of AuthReason.
	AuthFailure(reason string)
	// ContractMismatch counts an invocation refused because the host
	// called the tool under another definition.
	ContractMismatch(tool string)
	// Reconciled counts a reconciliation request answered for tool, with
	// the operation state reported (protocol's running, succeeded,
	// failed, cancelled or unknown).
	Reconciled(tool, state string)
	// HandlerStarted and HandlerDone bracket one handler run; outcome is
	// one of the Outcome constants.
	HandlerStarted(tool string)
	HandlerDone(tool, outcome string, d time.Duration)
}

// ExemplarObserver is implemented by Observers that link a handler run's
// duration to its trace (a Prometheus exemplar): for a run whose trace is
// sampled the agent calls HandlerDoneInTrace, with the trace's id, in
// place of HandlerDone. *metrics.Worker implements it.
type ExemplarObserver interface {
	HandlerDoneInTrace(tool, outcome string, d time.Duration, traceID string)
}

// handlerDone reports a handler run's end, with its trace when sampled.
func (a *Agent) handlerDone(e *execution, outcome string, d time.Duration) {
	if eo, ok := a.obs.(ExemplarObserver); ok {
		if sc := e.span.SpanContext(); sc.IsSampled() {
			eo.HandlerDoneInTrace(e.t.name, outcome, d, sc.TraceID().String())
			return
		}
	}
	a.obs.HandlerDone(e.t.name, outcome, d)
}

// The outcomes of a handler run that HandlerDone reports: how the agent
// answered for it.
const (
	OutcomeSucceeded        = "succeeded"
	OutcomeFailed           = "failed"
	OutcomeRetryTransient   = "retry_transient"
	OutcomeRetryRateLimited = "retry_rate_limited"
	OutcomeCancelled        = "cancelled"
	OutcomeIndeterminate    = "indeterminate"
	// OutcomeHandedBack: the call went back to the stream for another
	// delivery (a drain, or a lost process of an idempotent tool).
	OutcomeHandedBack = "handed_back"
)

// AuthReason names why a frame was refused, as Observer.AuthFailure
// reports it.
func AuthReason(err error) string {
	switch {
	case errors.Is(err, fabric.ErrUnknownKey):
		return "unknown_key"
	case errors.Is(err, protocol.ErrWrongRole):
		return "wrong_role"
	case errors.Is(err, protocol.ErrInvalidSession):
		return "wrong_session"
	case errors.Is(err, protocol.ErrSequence):
		return "sequence"
	case errors.Is(err, errWrongSubject):
		return "wrong_subject"
	case errors.Is(err, protocol.ErrMalformedFrame), errors.Is(err, protocol.ErrFrameTooLarge),
		errors.Is(err, protocol.ErrInvalidMessage), errors.Is(err, fabric.ErrInvalidHostID):
		return "malformed"
	}
	return "bad_tag"
}

var errWrongSubject = errors.New("frame for another tool's subject")

type nopObserver struct{}

func (nopObserver) ProcessStarted(string)                     {}
func (nopObserver) ProcessRestarted(string)                   {}
func (nopObserver) ProcessPoisoned(string, string)            {}
func (nopObserver) WatchdogStop(string)                       {}
func (nopObserver) ProcessInFlight(string, int)               {}
func (nopObserver) Redelivered(string)                        {}
func (nopObserver) DedupeHit(string)                          {}
func (nopObserver) AuthFailure(string)                        {}
func (nopObserver) ContractMismatch(string)                   {}
func (nopObserver) Reconciled(string, string)                 {}
func (nopObserver) HandlerStarted(string)                     {}
func (nopObserver) HandlerDone(string, string, time.Duration) {}

// dedupeHit counts an answer from the journal.
func (a *Agent) dedupeHit(tool string) {
	a.stats.dedupeHits.Add(1)
	a.obs.DedupeHit(tool)
}

// forged counts a refused frame and logs it at a bounded rate per reason:
// a flood of forged or garbage frames costs a counter increment each and a
// few log lines a second, whatever its size.
func (a *Agent) forged(err error, msg string, args ...any) {
	a.stats.forged.Add(1)
	reason := AuthReason(err)
	a.obs.AuthFailure(reason)
	a.rejectLog.Warn(reason, msg, append(args, "reason", reason, "err", err)...)
}
