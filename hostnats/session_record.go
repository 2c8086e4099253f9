package hostnats

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/hostloop"
	"github.com/splashfabric/splashfabric/workflow"

	"github.com/splashfabric/splashfabric/internal/clip"
)

// Keys of the splash_sessions bucket: "s.<session id>" holds a session's
// terminal record, "i.<incarnation>" a host process's.
const (
	sessionKeyPrefix     = "s."
	incarnationKeyPrefix = "i."
)

// maxArchiveIDBytes bounds a session id or incarnation used as a key; a
// host's own ids ("s-" + a 128-byte host id + 29 bytes) stay well inside.
const maxArchiveIDBytes = 256

// recordHeadroom is left free in a record for the headers of its publish
// (Nats-Expected-Stream), which JetStream counts against MaxValueSize.
const recordHeadroom = 256

// truncatedMark ends an Error that was cut to fit.
const truncatedMark = " [truncated]"

// archiveKey returns prefix+id when id is a valid key token, one of
// [A-Za-z0-9_-] like a host id, and at most maxArchiveIDBytes long. The
// check keeps a hostile id from naming another key or a wildcard.
func archiveKey(prefix, id string) (string, bool) {
	if id == "" || len(id) > maxArchiveIDBytes {
		return "", false
	}
	for i := 0; i < len(id); i++ {
		if !isTokenByte(id[i]) {
			return "", false
		}
	}
	return prefix + id, true
}

// sessionRecord is the stored form of a terminal hostloop.SessionStatus,
// the body the archive seals. The bucket is the host user's alone
// (deploy/nats), but any account with JetStream rights over it (an
// operator's, an unconfigured server's) could write it: the seal keeps
// such a write from being served as the session's outcome.
type sessionRecord struct {
	ID        string    `json:"id"`
	State     string    `json:"state"`
	Value     string    `json:"value,omitempty"`
	Error     string    `json:"error,omitempty"`
	Kind      string    `json:"kind,omitempty"`
	Created   time.Time `json:"created"`
	Truncated bool      `json:"truncated,omitempty"`
	Owner     string    `json:"owner,omitempty"`
	// Trace is the session's traceparent, so a finished session still
	// links to its trace.
	Trace string `json:"trace,omitempty"`
	// Audit is the newest of the session's audit events that fit beside
	// the rest: outcomes and counts, never a tool's output.
	Audit []auditRecord `json:"audit,omitempty"`
}

// auditRecord is one stored audit event.
type auditRecord struct {
	Seq        uint64    `json:"seq"`
	At         time.Time `json:"at"`
	Op         uint64    `json:"op,omitempty"`
	Tool       string    `json:"tool,omitempty"`
	CallIndex  uint64    `json:"call,omitempty"`
	Attempt    uint32    `json:"attempt,omitempty"`
	Outcome    string    `json:"outcome"`
	Detail     string    `json:"detail,omitempty"`
	Bytes      int       `json:"bytes,omitempty"`
	RetryClass int       `json:"retry_class,omitempty"`
}

func auditRecords(events []host.AuditEvent) []auditRecord {
	out := make([]auditRecord, len(events))
	for i, e := range events {
		out[i] = auditRecord{Seq: e.Seq, At: e.At.UTC(), Op: uint64(e.ID), Tool: e.Tool, CallIndex: e.CallIndex,
			Attempt: e.Attempt, Outcome: string(e.Outcome), Detail: e.Detail, Bytes: e.Bytes, RetryClass: int(e.RetryClass)}
	}
	return out
}

func auditEvents(recs []auditRecord) []host.AuditEvent {
	if len(recs) == 0 {
		return nil
	}
	out := make([]host.AuditEvent, len(recs))
	for i, r := range recs {
		out[i] = host.AuditEvent{Seq: r.Seq, At: r.At, ID: host.ExternalToolID(r.Op), Tool: r.Tool, CallIndex: r.CallIndex,
			Attempt: r.Attempt, Outcome: host.AuditOutcome(r.Outcome), Detail: r.Detail, Bytes: r.Bytes, RetryClass: host.RetryClass(r.RetryClass)}
	}
	return out
}

// incarnationRecord is the stored form of a hostloop.Incarnation.
type incarnationRecord struct {
	ID      string    `json:"id"`
	HostID  string    `json:"host_id"`
	Started time.Time `json:"started"`
}

// errorKinds are the host sentinels a record keeps across processes, by
// stored name; any other reason comes back as its text alone.
var errorKinds = []struct {
	err  error
	kind string
}{
	{hostloop.ErrHostStopped, "host_stopped"},
	{hostloop.ErrHostRestarted, "host_restarted"},
	{hostloop.ErrSubmissionWithdrawn, "submission_withdrawn"},
	{hostloop.ErrValueTooLarge, "value_too_large"},
	// A script over one of its session's budgets: the API's error_code
	// of a session read back from the archive must be the one it had.
	{host.ErrMemoryBudget, "memory_budget"},
	{host.ErrExecutionBudget, "execution_budget"},
	{host.ErrPendingLimit, "pending_limit"},
	{host.ErrInputTooLarge, "input_too_large"},
	{hostloop.ErrLedgerRejected, "ledger_rejected"},
	{workflow.ErrSessionCancelled, "cancelled"},
	{workflow.ErrMaxLifetime, "max_lifetime"},
}

// archivedError is a failure read back from a record: the original text,
// matching the sentinel its kind names.
type archivedError struct {
	msg  string
	kind error
}

func (e *archivedError) Error() string { return e.msg }
func (e *archivedError) Unwrap() error { return e.kind }

func kindOf(err error) string {
	for _, k := range errorKinds {
		if errors.Is(err, k.err) {
			return k.kind
		}
	}
	return ""
}

func errorOfKind(kind, msg string) error {
	for _, k := range errorKinds {
		if k.kind == kind {
			return &archivedError{msg: msg, kind: k.err}
		}
	}
	return errors.New(msg)
}

// encodeSession returns s's record in at most limit bytes, cutting Value
// first and then Error (marked) when it would not fit; cut reports that it
// did. The audit takes the room the rest leaves: its newest events.
func encodeSession(s hostloop.SessionStatus, limit int) (data []byte, cut bool, err error) {
	rec := sessionRecord{
		ID: string(s.ID), State: string(s.State), Value: s.Value, Error: s.Error,
		Kind: kindOf(s.Err), Created: s.Created.UTC(), Truncated: s.Truncated, Owner: s.Owner,
		Trace: s.Trace,
	}
	b, cut, err := encodeOutcome(rec, limit)
	if err != nil || len(s.Audit) == 0 {
		return b, cut, err
	}
	rec.Truncated = rec.Truncated || cut
	if cut {
		// The outcome alone filled the record: the audit stays out.
		return b, cut, nil
	}
	events := auditRecords(s.Audit)
	for len(events) > 0 {
		rec.Audit = events
		withAudit, err := json.Marshal(rec)
		if err != nil {
			return nil, false, err
		}
		if len(withAudit) <= limit {
			return withAudit, cut, nil
		}
		// Over the limit: drop the oldest, in proportion to the excess.
		over := len(withAudit) - limit
		drop := max(1, len(events)*over/max(1, len(withAudit)-len(b))+1)
		events = events[min(drop, len(events)):]
	}
	return b, cut, nil
}

// encodeOutcome is encodeSession without the audit.
func encodeOutcome(rec sessionRecord, limit int) (data []byte, cut bool, err error) {
	// Record runs this on the host loop's goroutine. JSON never takes
	// fewer bytes than the text it encodes, so a record whose value and
	// error alone exceed limit is cut without first encoding it whole.
	if len(rec.Value)+len(rec.Error) <= limit {
		if b, err := json.Marshal(rec); err != nil || len(b) <= limit {
			return b, false, err
		}
	}
	rec.Truncated = true
	// Each field is cut to what is left once the record around it is
	// encoded, measured by its JSON cost, so one pass per field fits.
	fields := []struct {
		p    *string
		mark string
	}{{&rec.Value, ""}, {&rec.Error, truncatedMark}}
	for _, f := range fields {
		if *f.p == "" {
			continue
		}
		orig := *f.p
		// A non-empty stand-in, so omitempty keeps the field's key in
		// the measure.
		stand := f.mark + "x"
		*f.p = stand
		b, err := json.Marshal(rec)
		if err != nil {
			return nil, false, err
		}
		*f.p = hostloop.JSONPrefix(orig, limit-len(b)+len(stand)-len(f.mark)) + f.mark
		if b, err = json.Marshal(rec); err != nil || len(b) <= limit {
			return b, true, err
		}
	}
	return nil, false, fmt.Errorf("hostnats: session record of %q does not fit in %d bytes", clip.String(rec.ID, clip.Echo), limit)
}

func decodeSession(data []byte) (hostloop.SessionStatus, error) {
	var rec sessionRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		return hostloop.SessionStatus{}, fmt.Errorf("hostnats: session record: %w", err)
	}
	s := hostloop.SessionStatus{
		ID: hostloop.SessionID(rec.ID), State: hostloop.SessionState(rec.State), Value: rec.Value,
		Error: rec.Error, Created: rec.Created, Truncated: rec.Truncated, Audit: auditEvents(rec.Audit), Owner: rec.Owner,
		Trace: rec.Trace,
	}
	if rec.State == string(hostloop.SessionFailed) || rec.State == string(hostloop.SessionCancelled) {
		s.Err = errorOfKind(rec.Kind, rec.Error)
	}
	return s, nil
}
