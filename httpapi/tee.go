package httpapi

import (
	"context"

	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/hostloop"
)

// tee calls each observer in turn.
type tee []hostloop.Observer

// Tee returns an observer that forwards every call to each of observers,
// in order, skipping nils, so the event streams and the metrics can watch
// the same loop. Each observer must itself not block.
func Tee(observers ...hostloop.Observer) hostloop.Observer {
	var t tee
	for _, o := range observers {
		if o != nil {
			t = append(t, o)
		}
	}
	return t
}

func (t tee) SessionChanged(s hostloop.SessionStatus) {
	for _, o := range t {
		o.SessionChanged(s)
	}
}

func (t tee) OperationChanged(session hostloop.SessionID, op hostloop.OperationStatus) {
	for _, o := range t {
		o.OperationChanged(session, op)
	}
}

func (t tee) Chunk(session hostloop.SessionID, c host.ExternalToolStreamChunk) {
	for _, o := range t {
		o.Chunk(session, c)
	}
}

func (t tee) Audit(session hostloop.SessionID, events []host.AuditEvent) {
	for _, o := range t {
		o.Audit(session, events)
	}
}

func (t tee) Dispatched(session hostloop.SessionID, inv host.ExternalInvocation) {
	for _, o := range t {
		o.Dispatched(session, inv)
	}
}

func (t tee) Rejected(reason string, err error) {
	for _, o := range t {
		o.Rejected(reason, err)
	}
}

var _ hostloop.PublishObserver = tee(nil)

// Publishing hands ctx through every observer that carries a trace to the
// workers, in order.
func (t tee) Publishing(ctx context.Context, session hostloop.SessionID, requestID string, inv host.ExternalInvocation) context.Context {
	for _, o := range t {
		if p, ok := o.(hostloop.PublishObserver); ok {
			ctx = p.Publishing(ctx, session, requestID, inv)
		}
	}
	return ctx
}

var _ hostloop.StartObserver = tee(nil)

// SessionStarted tells every observer that must know a session first.
func (t tee) SessionStarted(s hostloop.SessionStatus) {
	for _, o := range t {
		if so, ok := o.(hostloop.StartObserver); ok {
			so.SessionStarted(s)
		}
	}
}

var _ hostloop.ResumeObserver = tee(nil)

// Resuming tells every observer that follows resumption.
func (t tee) Resuming(pending int) {
	for _, o := range t {
		if r, ok := o.(hostloop.ResumeObserver); ok {
			r.Resuming(pending)
		}
	}
}

// ResumeFailed tells every observer that follows resumption.
func (t tee) ResumeFailed(reason string, session hostloop.SessionID, err error) {
	for _, o := range t {
		if r, ok := o.(hostloop.ResumeObserver); ok {
			r.ResumeFailed(reason, session, err)
		}
	}
}
