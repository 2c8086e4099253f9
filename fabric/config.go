package fabric

import (
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/splashfabric/splashfabric/protocol"
)

// Config holds the settings of the server-side resources the fabric
// provisions. The host and every worker must use the same Config: the
// consumer settings are written by whoever provisions last.
type Config struct {
	// Replicas of every stream and bucket: 1 on a single node, 3 in a
	// cluster.
	Replicas int
	// AckWait is how long a worker may hold a message without acking or
	// sending progress before JetStream redelivers it.
	AckWait time.Duration
	// MaxDeliver bounds redeliveries of one message (crash recovery); it
	// counts the first delivery.
	MaxDeliver int
	// MaxAckPending bounds unacked messages per consumer: the backpressure
	// of a tool's worker pool.
	MaxAckPending int
	// DuplicateWindow is how long JetStream remembers a message id, so a
	// republish of the same attempt after a reconnect is dropped.
	DuplicateWindow time.Duration
	// MaxMsgSize bounds one message on the streams; it must hold a sealed
	// frame with its largest payload.
	MaxMsgSize int32
	// EventsMaxAge is how long a terminal event waits in SPLASH_EVENTS for
	// a host that is away. It is also how long the stored answer of an
	// Idempotent tool's call (AnswerSubject) lives, and so that tool's
	// dedupe horizon, in place of DedupeHorizon: a duplicate older than
	// min(EventsMaxAge, DedupeHorizon) may run again.
	EventsMaxAge time.Duration
	// DedupeHorizon is how long an idempotency record (a claimed tool's)
	// and a cancel record live.
	DedupeHorizon time.Duration
	// SessionRetention is how long the splash_sessions bucket keeps a
	// session's terminal record and a host incarnation's record: for that
	// long after a session finished, or after the host process that held
	// it last refreshed its incarnation, GET /v1/sessions/{id} still
	// answers for it.
	SessionRetention time.Duration
	// Storage of streams and buckets; file unless testing.
	Storage jetstream.StorageType
}

// DefaultConfig returns the settings of a single-node deployment.
func DefaultConfig() Config {
	return Config{
		Replicas:         1,
		AckWait:          30 * time.Second,
		MaxDeliver:       5,
		MaxAckPending:    10000,
		DuplicateWindow:  2 * time.Minute,
		MaxMsgSize:       protocol.DefaultMaxFrameBytes,
		EventsMaxAge:     24 * time.Hour,
		DedupeHorizon:    24 * time.Hour,
		SessionRetention: 24 * time.Hour,
		Storage:          jetstream.FileStorage,
	}
}

// minMsgSize keeps MaxMsgSize above what an empty invocation frame needs,
// so a typo cannot make every publish fail.
const minMsgSize = 1024

// minSessionRetention keeps the incarnation refresh (a quarter of the
// retention) from turning into a stream of writes.
const minSessionRetention = 4 * time.Second

// Validate reports the first field out of range, wrapping ErrInvalidConfig.
func (c Config) Validate() error {
	switch {
	case c.Replicas < 1 || c.Replicas > 5:
		return fmt.Errorf("%w: Replicas %d, want 1..5", ErrInvalidConfig, c.Replicas)
	case c.AckWait <= 0:
		return fmt.Errorf("%w: AckWait %v, want > 0", ErrInvalidConfig, c.AckWait)
	case c.MaxDeliver < 1:
		return fmt.Errorf("%w: MaxDeliver %d, want >= 1", ErrInvalidConfig, c.MaxDeliver)
	case c.MaxAckPending < 1:
		return fmt.Errorf("%w: MaxAckPending %d, want >= 1", ErrInvalidConfig, c.MaxAckPending)
	case c.DuplicateWindow <= 0:
		return fmt.Errorf("%w: DuplicateWindow %v, want > 0", ErrInvalidConfig, c.DuplicateWindow)
	case c.MaxMsgSize < minMsgSize:
		return fmt.Errorf("%w: MaxMsgSize %d, want >= %d", ErrInvalidConfig, c.MaxMsgSize, minMsgSize)
	case c.EventsMaxAge <= 0:
		return fmt.Errorf("%w: EventsMaxAge %v, want > 0", ErrInvalidConfig, c.EventsMaxAge)
	case c.DedupeHorizon <= 0:
		return fmt.Errorf("%w: DedupeHorizon %v, want > 0", ErrInvalidConfig, c.DedupeHorizon)
	case c.SessionRetention < minSessionRetention:
		return fmt.Errorf("%w: SessionRetention %v, want >= %v", ErrInvalidConfig, c.SessionRetention, minSessionRetention)
	case c.Storage != jetstream.FileStorage && c.Storage != jetstream.MemoryStorage:
		return fmt.Errorf("%w: Storage %v", ErrInvalidConfig, c.Storage)
	}
	return nil
}
