package hostnats

import (
	"fmt"
	"time"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/protocol"
)

// Option tunes client-side behaviour of a HostTransport or a
// SessionArchive; server-side resources are set by fabric.Config. An option that
// does not apply to one of them (the event buffer and replay memory, for
// an archive) is accepted and ignored.
type Option func(*options) error

type options struct {
	eventBuffer    int
	maxPending     int
	publishTimeout time.Duration
	replayMemory   int
	onReject       func(reason, subject string, err error)
	onRecordReject func(reason string, err error)
	onError        func(error)
	// reconcileTimeout bounds HostTransport.Reconcile's wait.
	reconcileTimeout time.Duration
	// poolKeys and poolOf give the pools their own rings
	// (WithPoolKeys).
	poolKeys map[string]protocol.Keys
	poolOf   func(tool string) string
}

func defaultOptions() options {
	return options{
		eventBuffer:    1024,
		maxPending:     4096,
		publishTimeout: 5 * time.Second,
		replayMemory:   1 << 16,

		reconcileTimeout: DefaultReconcileTimeout,
	}
}

// WithPoolKeys gives each pool in keys (by pool name) its own key ring:
// the frames of a tool whose pool (poolOf; nil: every tool its own pool)
// has one are sealed and opened under it, so an answer verifies only
// under the ring of the pool serving its tool; a tool of any other pool
// uses the transport's key. poolOf runs on NATS callback goroutines and
// must be safe for concurrent use.
func WithPoolKeys(keys map[string]protocol.Keys, poolOf func(tool string) string) Option {
	return func(o *options) error {
		o.poolKeys, o.poolOf = keys, poolOf
		return nil
	}
}

// WithEventBuffer sets the capacity of the Events channel (default 1024).
// When it is full, the transport stops taking frames off NATS until the
// loop catches up.
func WithEventBuffer(n int) Option {
	return func(o *options) error {
		if n < 0 {
			return fmt.Errorf("%w: event buffer %d", fabric.ErrInvalidConfig, n)
		}
		o.eventBuffer = n
		return nil
	}
}

// WithMaxPending bounds publishes awaiting their acknowledgement (default
// 4096); beyond it Publish stalls briefly and then fails. For a
// SessionArchive it also bounds the records waiting for its writer; beyond
// it Record drops the record and counts it.
func WithMaxPending(n int) Option {
	return func(o *options) error {
		if n < 1 {
			return fmt.Errorf("%w: max pending %d", fabric.ErrInvalidConfig, n)
		}
		o.maxPending = n
		return nil
	}
}

// WithPublishTimeout sets how long a publish may wait for its
// acknowledgement before it is reported as EventPublishFailed (default 5s).
func WithPublishTimeout(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return fmt.Errorf("%w: publish timeout %v", fabric.ErrInvalidConfig, d)
		}
		o.publishTimeout = d
		return nil
	}
}

// WithReplayMemory sets how many finished requests keep their replay
// window (default 65536), so a replayed terminal frame is still refused
// after its request ended.
func WithReplayMemory(n int) Option {
	return func(o *options) error {
		if n < 1 {
			return fmt.Errorf("%w: replay memory %d", fabric.ErrInvalidConfig, n)
		}
		o.replayMemory = n
		return nil
	}
}

// WithRejectHandler is called for every dropped frame with its reason (one
// of the Reject… constants), the subject it came on and the error. It runs
// on a NATS callback goroutine and must not block; it is where metrics and
// the audit log hook in.
func WithRejectHandler(f func(reason, subject string, err error)) Option {
	return func(o *options) error {
		o.onReject = f
		return nil
	}
}

// WithRecordRejectHandler is called, for a SessionArchive, for every
// stored record refused because it fails authentication, with the reason
// (recordauth's "unsigned" or "bad_tag") and the error the read returns.
// It runs on the reader's goroutine and must not block; it is where the
// rejected-records metric hooks in.
func WithRecordRejectHandler(f func(reason string, err error)) Option {
	return func(o *options) error {
		o.onRecordReject = f
		return nil
	}
}

// WithErrorHandler receives failures that have no Event kind: a cancel
// record that was not stored, or a consumer error; for a SessionArchive, a
// session record that was dropped or not stored, or an incarnation that
// could not be refreshed. It must not block.
func WithErrorHandler(f func(error)) Option {
	return func(o *options) error {
		o.onError = f
		return nil
	}
}
