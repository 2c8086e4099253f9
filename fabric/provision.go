package fabric

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// defaultTimeout bounds a network call whose context has no deadline.
const defaultTimeout = 10 * time.Second

// withDefaultTimeout gives ctx a deadline if it has none, as the jetstream
// package does, so a provisioning call cannot hang on a dead server.
func withDefaultTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, defaultTimeout)
}

// Provision creates or updates the invocation stream, the events stream,
// the ledger stream, the cancel bucket and the session bucket to match cfg. It is idempotent; a changed cfg updates
// the resources in place, except for what JetStream cannot change (storage
// type, retention), which fails with the server's error.
func Provision(ctx context.Context, js jetstream.JetStream, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	if _, err := js.CreateOrUpdateStream(ctx, invokeStreamConfig(cfg)); err != nil {
		return fmt.Errorf("fabric: provision %s: %w", StreamInvoke, err)
	}
	if _, err := js.CreateOrUpdateStream(ctx, eventsStreamConfig(cfg)); err != nil {
		return fmt.Errorf("fabric: provision %s: %w", StreamEvents, err)
	}
	if _, err := js.CreateOrUpdateStream(ctx, ledgerStreamConfig(cfg)); err != nil {
		return fmt.Errorf("fabric: provision %s: %w", StreamLedger, err)
	}
	if _, err := js.CreateOrUpdateKeyValue(ctx, cancelBucketConfig(cfg)); err != nil {
		return fmt.Errorf("fabric: provision %s: %w", BucketCancel, err)
	}
	if _, err := js.CreateOrUpdateKeyValue(ctx, sessionBucketConfig(cfg)); err != nil {
		return fmt.Errorf("fabric: provision %s: %w", BucketSessions, err)
	}
	return nil
}

// maxSessionValueBytes caps one record of the session bucket: the bucket
// keeps a record per finished session for SessionRetention, so a script
// value larger than this is cut rather than stored whole.
const maxSessionValueBytes = 64 << 10

// SessionValueBytes is the MaxValueSize of BucketSessions under c: the
// largest sealed record the host's session archive may store there.
func (c Config) SessionValueBytes() int32 { return min(c.MaxMsgSize, maxSessionValueBytes) }

func invokeStreamConfig(cfg Config) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        StreamInvoke,
		Description: "Splash invocations, one subject per tool",
		Subjects:    []string{invokePrefix + ">"},
		Retention:   jetstream.WorkQueuePolicy,
		Storage:     cfg.Storage,
		Replicas:    cfg.Replicas,
		Duplicates:  cfg.DuplicateWindow,
		MaxMsgSize:  cfg.MaxMsgSize,
		// A full queue must refuse new work rather than drop claimed work.
		Discard: jetstream.DiscardNew,
	}
}

func eventsStreamConfig(cfg Config) jetstream.StreamConfig {
	// JetStream refuses a duplicate window longer than MaxAge.
	dup := min(cfg.DuplicateWindow, cfg.EventsMaxAge)
	return jetstream.StreamConfig{
		Name:        StreamEvents,
		Description: "Splash chunks and terminal events, one subject per host",
		Subjects:    []string{eventsPrefix + ">"},
		Retention:   jetstream.LimitsPolicy,
		Storage:     cfg.Storage,
		Replicas:    cfg.Replicas,
		Duplicates:  dup,
		MaxAge:      cfg.EventsMaxAge,
		MaxMsgSize:  cfg.MaxMsgSize,
		// Workers read an Idempotent call's stored answer back from its
		// AnswerSubject; a direct get is served by any replica and names
		// the subject in the request, so a worker's permission can be
		// confined to answer subjects.
		AllowDirect: true,
	}
}

func ledgerStreamConfig(cfg Config) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        StreamLedger,
		Description: "Splash session ledgers, one subject per session",
		Subjects:    []string{LedgerSubjects},
		Retention:   jetstream.LimitsPolicy,
		Storage:     cfg.Storage,
		Replicas:    cfg.Replicas,
		// No age: a ledger is kept for as long as its session waits, and
		// goes when the session ends (or an operator ends it). An age
		// would be counted from each append, so a live session waiting on
		// a slow tool would lose its history to it. Provisioning an
		// existing stream lifts an age set by earlier versions.
		MaxAge:     0,
		MaxMsgSize: cfg.MaxMsgSize,
		// A host removes a finished session's ledger with one rollup
		// message on its subject (hostnats.LedgerLog.Remove), which then
		// expires by its own TTL; nothing else may delete.
		DenyDelete:  true,
		AllowRollup: true,
		AllowMsgTTL: true,
		// A host stores what a step of its loop made ready for many
		// sessions in one atomic batch (hostnats.LedgerLog.AppendBatch):
		// one answer from the stream instead of one per session.
		AllowAtomicPublish: true,
	}
}

func cancelBucketConfig(cfg Config) jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{
		Bucket:      BucketCancel,
		Description: "Splash cancel records, key = hex SHA-256 of the request id",
		History:     1,
		TTL:         cfg.DedupeHorizon,
		Storage:     cfg.Storage,
		Replicas:    cfg.Replicas,
		// A cancel record is one sealed frame.
		MaxValueSize: cfg.MaxMsgSize,
	}
}

func sessionBucketConfig(cfg Config) jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{
		Bucket:       BucketSessions,
		Description:  "Splash session archive: s.<session id> = terminal status, i.<incarnation> = host process",
		History:      1,
		TTL:          cfg.SessionRetention,
		Storage:      cfg.Storage,
		Replicas:     cfg.Replicas,
		MaxValueSize: cfg.SessionValueBytes(),
	}
}

// EnsureToolConsumer creates or updates tool's durable pull consumer on
// SPLASH_INVOKE with cfg's ack settings and returns it. Provision must have
// run first.
func EnsureToolConsumer(ctx context.Context, js jetstream.JetStream, cfg Config, tool string) (jetstream.Consumer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	subject, err := InvokeSubject(tool)
	if err != nil {
		return nil, err
	}
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	cons, err := js.CreateOrUpdateConsumer(ctx, StreamInvoke, jetstream.ConsumerConfig{
		Durable:       ConsumerName(tool),
		Description:   "Splash worker pool of " + tool,
		FilterSubject: subject,
		DeliverPolicy: jetstream.DeliverAllPolicy,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       cfg.AckWait,
		MaxDeliver:    cfg.MaxDeliver,
		MaxAckPending: cfg.MaxAckPending,
	})
	if err != nil {
		return nil, fmt.Errorf("fabric: consumer for %q: %w", tool, err)
	}
	return cons, nil
}

// EnsureToolConsumers runs EnsureToolConsumer for each of tools, stopping
// at the first failure. A host calls it for every tool of its catalog, so
// the workers of each pool find their consumers made: a pool's NATS
// identity may bind to its consumers, not create or change them.
func EnsureToolConsumers(ctx context.Context, js jetstream.JetStream, cfg Config, tools []string) error {
	for _, tool := range tools {
		if _, err := EnsureToolConsumer(ctx, js, cfg, tool); err != nil {
			return err
		}
	}
	return nil
}
