package fabric

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/splashfabric/splashfabric/protocol"

	"github.com/splashfabric/splashfabric/internal/clip"
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
		return fmt.Errorf("%w: %q has %d bytes, want 1..%d", ErrInvalidHostID, clip.String(id, clip.Echo), len(id), MaxHostIDBytes)
	}
	for i := 0; i < len(id); i++ {
		if !isTokenByte(id[i]) {
			return fmt.Errorf("%w: %q has byte %q at %d", ErrInvalidHostID, clip.String(id, clip.Echo), id[i], i)
		}
	}
	return nil
}

func isTokenByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// ToolToken is the one subject token that names tool wherever a tool
// name's dots would not do: the events and answer subjects of its calls,
// its cancel records. It is the pool consumer's name (ConsumerName), which
// is injective over legal tool names, so a permission naming one tool's
// token never covers another's.
func ToolToken(tool string) string { return ConsumerName(tool) }

// EventsSubject is where a worker of tool's pool JetStream-publishes the
// chunks and terminal events of tool's calls for hostID:
// splash.events.<host>.<tool token>. Both share the subject so that the
// stream stores a call's chunks and its result in publish order and the
// host's one consumer delivers them in that order; the tool's token in it
// lets a pool's NATS identity publish the events of its own tools only.
// hostID must pass ValidateHostID, tool protocol.ValidateToolName.
func EventsSubject(hostID, tool string) string { return eventsPrefix + hostID + "." + ToolToken(tool) }

// AnswerSubject is where a worker JetStream-publishes the terminal answer
// of a call of an Idempotent tool keyed idempotencyKey, for hostID: one
// subject per operation below the tool's events subject,
// splash.events.<host>.<tool token>.<hash>, so that the stream's last
// message on it is the operation's stored answer, which a later duplicate
// reads back with a direct get instead of a journal record. The key is
// hashed as the journal's key is (hex SHA-256, the same as
// idempotency.StorageKey), which keeps the subject one short token
// whatever bytes the key holds.
func AnswerSubject(hostID, tool, idempotencyKey string) string {
	sum := sha256.Sum256([]byte(idempotencyKey))
	return EventsSubject(hostID, tool) + "." + hex.EncodeToString(sum[:])
}

// HostEventsSubjects are the filter subjects of a host's events consumer:
// every tool's events and answer subjects below its host id. One consumer
// over all of them keeps a call's chunks and its answer in stream order.
func HostEventsSubjects(hostID string) []string {
	return []string{eventsPrefix + hostID + ".>"}
}

// ParseEventSubject splits an events or answer subject (see
// EventsSubject, AnswerSubject) into the host id and the tool token it
// names; ok is false for any other subject.
func ParseEventSubject(subject string) (hostID, toolToken string, ok bool) {
	rest, found := strings.CutPrefix(subject, eventsPrefix)
	if !found {
		return "", "", false
	}
	parts := strings.Split(rest, ".")
	if len(parts) < 2 || len(parts) > 3 || parts[0] == "" || parts[1] == "" || len(parts) == 3 && parts[2] == "" {
		return "", "", false
	}
	return parts[0], parts[1], true
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

// CancelKey is the KV key of the cancel record of requestID, a call of a
// tool of pool: the pool's token and the hex SHA-256 of the request id
// (KV keys have a narrower alphabet than request ids), so a pool's
// workers watch and read their own pool's records only, through one
// filter (CancelKeys) that a NATS permission can name.
func CancelKey(pool, requestID string) string {
	sum := sha256.Sum256([]byte(requestID))
	return PoolToken(pool) + "." + hex.EncodeToString(sum[:])
}

// CancelKeys matches the cancel record keys of pool (a KV key filter).
func CancelKeys(pool string) string { return PoolToken(pool) + ".*" }
