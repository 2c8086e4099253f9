package hostloop

import (
	"fmt"

	"github.com/splashfabric/splashfabric/host"
)

// Limits are an operator's bounds on what one host takes on. The zero
// value takes the defaults below; a negative bound is refused by
// StartLoop.
type Limits struct {
	// MaxSuspendedSessions bounds the sessions waiting on operations at
	// once; a submission over it is refused with ErrHostBusy, and nothing
	// already accepted is touched.
	MaxSuspendedSessions int
	// DefaultToolCallBudget and DefaultMaxPending apply to a submission
	// that gives none (and override an unlimited runtime template).
	DefaultToolCallBudget int
	DefaultMaxPending     int
	// MaxToolCallBudget and MaxPending bound what a submission may ask
	// for; more is refused with ErrLimitTooHigh.
	MaxToolCallBudget int
	MaxPending        int
	// MaxSessionsPerOwner bounds the sessions one owner (an API token's,
	// Submission.Owner) holds waiting at once, so that one client cannot
	// take every slot of MaxSuspendedSessions; a submission over it is
	// refused with ErrOwnerBusy. Zero picks a quarter of
	// MaxSuspendedSessions, but no fewer than 64 (or all of them).
	MaxSessionsPerOwner int
	// SessionMemoryBudget is each session's memory budget in bytes (see
	// host.Config.MemoryBudget), for a runtime template that sets none.
	SessionMemoryBudget int64
}

// Defaults of Limits.
const (
	DefaultMaxSuspendedSessions     = 10_000
	DefaultSessionToolCallBudget    = 1_000
	DefaultSessionMaxPending        = 256
	DefaultMaxSessionToolCallBudget = 1_000_000
	// DefaultMaxSessionPending bounds what a session may hold pending: each
	// pending operation costs the host a few KiB until it ends, awaited
	// or not.
	DefaultMaxSessionPending   = 10_000
	DefaultSessionMemoryBudget = host.DefaultMemoryBudget
)

// ownerShare is the share of the host's sessions one owner may hold when
// Limits.MaxSessionsPerOwner is zero: a quarter, so that at least four
// clients each find room whatever the others do; on a host too small for
// a quarter to be of use, minOwnerSessions (or all it holds).
const (
	ownerShare       = 4
	minOwnerSessions = 64
)

func (l Limits) withDefaults() (Limits, error) {
	for _, v := range []int{l.MaxSuspendedSessions, l.DefaultToolCallBudget, l.DefaultMaxPending, l.MaxToolCallBudget, l.MaxPending, l.MaxSessionsPerOwner} {
		if v < 0 {
			return l, fmt.Errorf("%w: negative limit in %+v", ErrInvalidConfig, l)
		}
	}
	if l.SessionMemoryBudget < 0 {
		return l, fmt.Errorf("%w: negative session memory budget %d", ErrInvalidConfig, l.SessionMemoryBudget)
	}
	if l.SessionMemoryBudget == 0 {
		l.SessionMemoryBudget = DefaultSessionMemoryBudget
	}
	def := func(p *int, d int) {
		if *p == 0 {
			*p = d
		}
	}
	def(&l.MaxSuspendedSessions, DefaultMaxSuspendedSessions)
	def(&l.MaxSessionsPerOwner, min(l.MaxSuspendedSessions, max(l.MaxSuspendedSessions/ownerShare, minOwnerSessions)))
	def(&l.MaxToolCallBudget, DefaultMaxSessionToolCallBudget)
	def(&l.MaxPending, DefaultMaxSessionPending)
	// A default never exceeds the maximum an operator set alone.
	def(&l.DefaultToolCallBudget, min(DefaultSessionToolCallBudget, l.MaxToolCallBudget))
	def(&l.DefaultMaxPending, min(DefaultSessionMaxPending, l.MaxPending))
	switch {
	case l.DefaultToolCallBudget > l.MaxToolCallBudget:
		return l, fmt.Errorf("%w: default tool call budget %d above the maximum %d", ErrInvalidConfig, l.DefaultToolCallBudget, l.MaxToolCallBudget)
	case l.DefaultMaxPending > l.MaxPending:
		return l, fmt.Errorf("%w: default pending limit %d above the maximum %d", ErrInvalidConfig, l.DefaultMaxPending, l.MaxPending)
	}
	return l, nil
}

// check refuses a submission asking for more than the limits allow.
func (l Limits) check(sub Submission) error {
	switch {
	case sub.ToolCallBudget > l.MaxToolCallBudget:
		return fmt.Errorf("%w: tool call budget %d, maximum %d", ErrLimitTooHigh, sub.ToolCallBudget, l.MaxToolCallBudget)
	case sub.MaxPending > l.MaxPending:
		return fmt.Errorf("%w: pending limit %d, maximum %d", ErrLimitTooHigh, sub.MaxPending, l.MaxPending)
	case sub.MaxLifetime < 0:
		return fmt.Errorf("%w: max lifetime %v", ErrInvalidSubmission, sub.MaxLifetime)
	case len(sub.Trace) > MaxTraceBytes:
		return fmt.Errorf("%w: trace of %d bytes, maximum %d", ErrInvalidSubmission, len(sub.Trace), MaxTraceBytes)
	}
	return nil
}

// MaxTraceBytes bounds Submission.Trace, which every durable session's
// ledger keeps: a W3C traceparent is 55 bytes.
const MaxTraceBytes = 256
