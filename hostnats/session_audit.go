package hostnats

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/hostloop"
)

// auditKeyPrefix starts the key of a finished session's audit in the
// splash_sessions bucket, beside its outcome ("s.").
const auditKeyPrefix = "a."

// auditRecord is one stored audit event: counts and outcomes, never a
// tool's output (the runtime's audit holds none).
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

var _ hostloop.AuditArchive = (*SessionArchive)(nil)

// RecordAudit queues a finished session's audit to be stored beside its
// outcome: the newest events that fit one record. It never blocks on the
// server; a write that fails is counted as Record's are.
func (a *SessionArchive) RecordAudit(id hostloop.SessionID, events []host.AuditEvent) {
	key, ok := archiveKey(auditKeyPrefix, string(id))
	if !ok || len(events) == 0 {
		return
	}
	body, err := encodeAudit(events, a.budget)
	if err != nil {
		a.report(fmt.Errorf("hostnats: audit of %q dropped: %w", truncate(string(id)), err))
		return
	}
	a.enqueue(archiveWrite{id: id, key: key, data: a.seal.Seal(key, body), audit: true})
}

// LookupAudit returns the stored audit of a finished session, oldest
// first; hostloop.ErrUnknownSession when none is stored.
func (a *SessionArchive) LookupAudit(ctx context.Context, id hostloop.SessionID) ([]host.AuditEvent, error) {
	key, ok := archiveKey(auditKeyPrefix, string(id))
	if !ok {
		return nil, fmt.Errorf("%w: %q is not a session id", hostloop.ErrUnknownSession, truncate(string(id)))
	}
	a.mu.Lock()
	w, inFlight := a.pendingAudit[id]
	a.mu.Unlock()
	data := w.data
	if !inFlight {
		ctx, cancel := withDefaultTimeout(ctx)
		defer cancel()
		e, err := a.kv.Get(ctx, key)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
			return nil, fmt.Errorf("%w: no audit of %q", hostloop.ErrUnknownSession, id)
		case err != nil:
			return nil, fmt.Errorf("hostnats: audit of %q: %w", id, err)
		}
		data = e.Value()
	}
	body, err := a.open(key, data)
	if err != nil {
		return nil, err
	}
	return decodeAudit(body)
}

// encodeAudit writes the newest events that fit in limit bytes.
func encodeAudit(events []host.AuditEvent, limit int) ([]byte, error) {
	recs := make([]auditRecord, len(events))
	for i, e := range events {
		recs[i] = auditRecord{Seq: e.Seq, At: e.At.UTC(), Op: uint64(e.ID), Tool: e.Tool, CallIndex: e.CallIndex,
			Attempt: e.Attempt, Outcome: string(e.Outcome), Detail: e.Detail, Bytes: e.Bytes, RetryClass: int(e.RetryClass)}
	}
	for len(recs) > 0 {
		b, err := json.Marshal(recs)
		if err != nil || len(b) <= limit {
			return b, err
		}
		// Over the limit: drop the oldest in proportion, at least one.
		drop := max(1, len(recs)*(len(b)-limit)/len(b)+1)
		recs = recs[min(drop, len(recs)):]
	}
	return []byte("[]"), nil
}

func decodeAudit(body []byte) ([]host.AuditEvent, error) {
	var recs []auditRecord
	if err := json.Unmarshal(body, &recs); err != nil {
		return nil, fmt.Errorf("hostnats: audit record: %w", err)
	}
	out := make([]host.AuditEvent, len(recs))
	for i, r := range recs {
		out[i] = host.AuditEvent{Seq: r.Seq, At: r.At, ID: host.ExternalToolID(r.Op), Tool: r.Tool, CallIndex: r.CallIndex,
			Attempt: r.Attempt, Outcome: host.AuditOutcome(r.Outcome), Detail: r.Detail, Bytes: r.Bytes, RetryClass: host.RetryClass(r.RetryClass)}
	}
	return out, nil
}
