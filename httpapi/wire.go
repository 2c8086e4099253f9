package httpapi

import (
	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/hostloop"
	"github.com/splashfabric/splashfabric/httpapi/apiwire"
	"github.com/splashfabric/splashfabric/tracing"
)

// The wire types (package apiwire) are the API's own: host's structs may
// grow or rename fields without changing what clients parse. These turn
// the loop's values into them.

func terminal(s hostloop.SessionState) bool { return s.Terminal() }

func sessionOf(s hostloop.SessionStatus) apiwire.Session {
	out := apiwire.Session{
		ID:         string(s.ID),
		State:      string(s.State),
		Error:      s.Error,
		ErrorCode:  sessionErrorCode(s.Err),
		Created:    s.Created.UTC(),
		Truncated:  s.Truncated,
		Operations: operationsOf(s.Operations),
	}
	if s.State == hostloop.SessionCompleted {
		v := s.Value
		out.Value = &v
	}
	if sc, err := tracing.ParseTraceParent(s.Trace); err == nil {
		out.TraceID = sc.TraceID().String()
	}
	return out
}

func operationsOf(ops []hostloop.OperationStatus) []apiwire.Operation {
	out := make([]apiwire.Operation, 0, len(ops))
	for _, o := range ops {
		out = append(out, apiwire.Operation{
			Session:           string(o.Session),
			ID:                o.ID.String(),
			RequestID:         o.RequestID,
			Tool:              o.Tool,
			State:             o.State.String(),
			Attempt:           o.Attempt,
			Worker:            o.Worker,
			Since:             o.Since.UTC(),
			CancelDisposition: o.CancelDisposition,
		})
	}
	return out
}

func auditEntryOf(e host.AuditEvent) apiwire.AuditEntry {
	out := apiwire.AuditEntry{
		Seq:       e.Seq,
		At:        e.At.UTC(),
		Operation: e.ID.String(),
		Tool:      e.Tool,
		CallIndex: e.CallIndex,
		Attempt:   e.Attempt,
		Outcome:   string(e.Outcome),
		Detail:    e.Detail,
		Bytes:     e.Bytes,
	}
	if e.RetryClass != 0 {
		out.RetryClass = e.RetryClass.String()
	}
	return out
}

func chunkOf(c host.ExternalToolStreamChunk) apiwire.Chunk {
	return apiwire.Chunk{
		Operation:     c.ID.String(),
		Tool:          c.Tool,
		Index:         c.Index,
		Text:          c.Text,
		SourceBytes:   c.SourceBytes,
		ReleasedBytes: c.ReleasedBytes,
	}
}
