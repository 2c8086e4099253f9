package fabric

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/splashfabric/splashfabric/protocol"
)

// Names of the server-side resources.
const (
	// StreamInvoke is the work-queue stream of invocations.
	StreamInvoke = "SPLASH_INVOKE"
	// StreamLedger holds the session ledgers of durable scripts, one
	// subject per session.
	StreamLedger = "SPLASH_LEDGER"
	// StreamEvents holds chunks and terminal events until their host acks them.
	StreamEvents = "SPLASH_EVENTS"
	// BucketCancel is the KV bucket of cancel records.
	BucketCancel = "splash_cancel"
	// BucketSessions is the KV bucket of the host's session archive:
	// terminal session records and host incarnations.
	BucketSessions = "splash_sessions"
)

// Subject prefixes; each is followed by a tool name or a host id.
const (
	invokePrefix    = "splash.invoke."
	eventsPrefix    = "splash.events."
	cancelPrefix    = "splash.cancel."
	reconcilePrefix = "splash.reconcile."
	ledgerPrefix    = "splash.ledger."
)

// Header names set on fabric messages.
const (
	// HeaderHost names the host that waits for an invocation's answer;
	// workers send its chunks and terminal events to EventsSubject of it.
	HeaderHost = "Splash-Host"
	// HeaderWorker names the worker that sent an event, for status and
	// metrics; it is not authenticated.
	HeaderWorker = "Splash-Worker"
	// HeaderMsgID is JetStream's deduplication header.
	HeaderMsgID = jetstream.MsgIDHeader
)

// MaxHostIDBytes bounds a host id so the consumer name built from it stays
// well inside JetStream's limit.
const MaxHostIDBytes = 128

// InvokeSubject returns the subject invocations of tool are published on.
// Dots in a tool name become subject tokens, so "text.remote" maps to
// splash.invoke.text.remote.
func InvokeSubject(tool string) (string, error) {
	if err := protocol.ValidateToolName(tool); err != nil {
		return "", err
	}
	return invokePrefix + tool, nil
}

// ConsumerName returns the durable name of tool's pool consumer. It is
// injective over valid tool names: a name without '_' becomes "pool_" with
// dots turned into '_'; a name with '_' could then collide ("a.b" and
// "a_b"), so it gets the distinct prefix "pool-" and a hash suffix. The
// result is only meaningful for a name that ValidateToolName accepts.
func ConsumerName(tool string) string {
	flat := strings.ReplaceAll(tool, ".", "_")
	if !strings.Contains(tool, "_") {
		return "pool_" + flat
	}
	sum := sha256.Sum256([]byte(tool))
	return "pool-" + flat + "_" + hex.EncodeToString(sum[:8])
}

// ValidateHostID accepts 1..MaxHostIDBytes bytes of [A-Za-z0-9_-]: one
// subject token that is also legal inside a consumer name.
func ValidateHostID(id string) error {
	if id == "" || len(id) > MaxHostIDBytes {
		return fmt.Errorf("%w: %q has %d bytes, want 1..%d", ErrInvalidHostID, truncate(id), len(id), MaxHostIDBytes)
	}
	for i := 0; i < len(id); i++ {
		if !isTokenByte(id[i]) {
			return fmt.Errorf("%w: %q has byte %q at %d", ErrInvalidHostID, truncate(id), id[i], i)
		}
	}
	return nil
}

func isTokenByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// EventsSubject is where workers JetStream-publish the chunks and terminal
// events for hostID. Both share the subject so that the stream stores a
// call's chunks and its result in publish order and the host's one
// consumer delivers them in that order. hostID must pass ValidateHostID.
func EventsSubject(hostID string) string { return eventsPrefix + hostID }

// answerInfix separates a host's events subject from the per-operation
// answer subjects below it.
const answerInfix = ".r."

// AnswerSubject is where a worker JetStream-publishes the terminal answer
// of a call of an Idempotent tool keyed idempotencyKey, for hostID: one
// subject per operation, so that the stream's last message on it is the
// operation's stored answer, which a later duplicate reads back with a
// direct get instead of a journal record. The key is hashed as the
// journal's key is (hex SHA-256, the same as idempotency.StorageKey), which
// keeps the subject one short token whatever bytes the key holds.
// hostID must pass ValidateHostID.
func AnswerSubject(hostID, idempotencyKey string) string {
	sum := sha256.Sum256([]byte(idempotencyKey))
	return eventsPrefix + hostID + answerInfix + hex.EncodeToString(sum[:])
}

// HostEventsSubjects are the filter subjects of a host's events consumer:
// its events subject, and every answer subject below it. One consumer over
// both keeps a call's chunks and its answer in stream order.
func HostEventsSubjects(hostID string) []string {
	return []string{EventsSubject(hostID), eventsPrefix + hostID + answerInfix + ">"}
}

// CancelSubject is the core broadcast subject of tool's cancellations. tool
// must pass protocol.ValidateToolName.
func CancelSubject(tool string) string { return cancelPrefix + tool }

// LedgerSubject is the subject of session's ledger in StreamLedger.
// session must pass ValidateHostID: a host makes its session ids of
// [A-Za-z0-9_-].
func LedgerSubject(session string) string { return ledgerPrefix + session }

// LedgerSubjects matches every session's ledger subject; the session is
// what follows LedgerSubject("").
const LedgerSubjects = ledgerPrefix + ">"

// ReconcileSubject is the request/reply subject of tool's reconciliation.
// tool must pass protocol.ValidateToolName.
func ReconcileSubject(tool string) string { return reconcilePrefix + tool }

// MsgID is the Nats-Msg-Id of an invocation attempt: a republish of the same
// attempt is dropped by the stream; a retry (next attempt) is not.
func MsgID(idempotencyKey string, attempt uint32) string {
	return idempotencyKey + "/" + strconv.FormatUint(uint64(attempt), 10)
}

// EventMsgID is the Nats-Msg-Id of a terminal event, "r/<request>/<attempt>/<kind>",
// so a worker that sends the same answer twice stores it once.
func EventMsgID(requestID string, attempt uint32, kind protocol.MessageKind) string {
	return "r/" + requestID + "/" + strconv.FormatUint(uint64(attempt), 10) + "/" + string(kind)
}

// ChunkMsgID is the Nats-Msg-Id of worker frame k of an attempt when that
// frame is a chunk, "r/<request>/<attempt>/chunk-<k>": a republish of the
// same frame is stored once, and the id never equals a terminal event's.
func ChunkMsgID(requestID string, attempt, k uint32) string {
	return EventMsgID(requestID, attempt, protocol.MessageKind("chunk-"+strconv.FormatUint(uint64(k), 10)))
}

// CancelKey is the KV key of requestID's cancel record: hex SHA-256, since
// KV keys have a narrower alphabet than request ids.
func CancelKey(requestID string) string {
	sum := sha256.Sum256([]byte(requestID))
	return hex.EncodeToString(sum[:])
}

// truncate bounds how much of a hostile input an error repeats.
func truncate(s string) string {
	const max = 64
	if len(s) > max {
		return s[:max] + "..."
	}
	return s
}

// JournalBucketPrefix starts the name of every idempotency journal
// bucket: the shared one a pool without a name keeps, and each named
// pool's (JournalBucket).
const JournalBucketPrefix = "splash_idempotency"
