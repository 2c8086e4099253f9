package workeragent

import "sync/atomic"

// Stats is a snapshot of an agent's counters since New. The counters only
// grow, except InFlight, which is a gauge.
type Stats struct {
	// Received counts invocation messages handed to the agent, including
	// redeliveries and rejected ones.
	Received uint64
	// Executed counts handler runs.
	Executed uint64
	// DedupeHits counts invocations answered from the journal's stored
	// result instead of their own: replayed without running, or, for an
	// Idempotent tool, run but beaten to the journal by a duplicate.
	DedupeHits uint64
	// Deferred counts invocations put back because another holder of the
	// same idempotency key was still running it.
	Deferred uint64
	// TakenOver counts invocations whose previous holder lost its lease
	// without a result; for Idempotent tools, which take no lease,
	// redeliveries that found no stored result.
	TakenOver uint64
	// Indeterminate counts non-idempotent calls answered indeterminate.
	Indeterminate uint64
	// Forged counts invocation, cancel or stored-answer frames that failed
	// authentication or did not match their subject; they are never run
	// (nor replayed).
	Forged uint64
	// Redeliveries counts invocation messages the stream delivered more
	// than once.
	Redeliveries uint64
	// CancelledBeforeStart counts calls whose cancellation was recorded
	// before any worker picked them up; they never ran.
	CancelledBeforeStart uint64
	// CancelRequests counts authenticated cancellation requests that
	// matched a running call of this agent.
	CancelRequests uint64
	// GivenBack counts calls handed back for redelivery during a drain.
	GivenBack uint64
	// PublishErrors counts terminal events whose publish failed; the job
	// is redelivered and the stored result replayed.
	PublishErrors uint64
	// ChunkPublishErrors counts chunks the events stream did not store
	// (refused, timed out, or lost in a reconnect). They are not retried;
	// the host sees a gap in Chunk.Sequence.
	ChunkPublishErrors uint64
	// ContractMismatches counts invocations refused because the host
	// called the tool under another definition.
	ContractMismatches uint64
	// Reconciled counts reconciliation requests answered; refused ones
	// are counted in Forged and never answered.
	Reconciled uint64
	// PullRestarts counts pulls asked again because a tool's pull had
	// been silent for two idle heartbeats (fabric.PullHeartbeat): the
	// server held none of the agent's requests, or lost them. Each one
	// stands for a pause of about two heartbeats in that tool's pickups.
	PullRestarts uint64
	// InFlight is how many invocations are being processed right now.
	InFlight int64
}

// counters is the agent's live form of Stats; every field is atomic, so
// any goroutine updates and reads them without a lock.
type counters struct {
	received, executed, dedupeHits, deferred, takenOver, indeterminate atomic.Uint64
	forged, redeliveries, cancelledBeforeStart, cancelRequests         atomic.Uint64
	givenBack, publishErrors, chunkPublishErrors, contractMismatches   atomic.Uint64
	reconciled, pullRestarts                                           atomic.Uint64
	inFlight                                                           atomic.Int64
}

func (c *counters) snapshot() Stats {
	return Stats{
		Received:             c.received.Load(),
		Executed:             c.executed.Load(),
		DedupeHits:           c.dedupeHits.Load(),
		Deferred:             c.deferred.Load(),
		TakenOver:            c.takenOver.Load(),
		Indeterminate:        c.indeterminate.Load(),
		Forged:               c.forged.Load(),
		Redeliveries:         c.redeliveries.Load(),
		CancelledBeforeStart: c.cancelledBeforeStart.Load(),
		CancelRequests:       c.cancelRequests.Load(),
		GivenBack:            c.givenBack.Load(),
		PublishErrors:        c.publishErrors.Load(),
		ChunkPublishErrors:   c.chunkPublishErrors.Load(),
		ContractMismatches:   c.contractMismatches.Load(),
		Reconciled:           c.reconciled.Load(),
		PullRestarts:         c.pullRestarts.Load(),
		InFlight:             c.inFlight.Load(),
	}
}
