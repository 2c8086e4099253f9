package workeragent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/idempotency"
	"github.com/splashfabric/splashfabric/protocol"
)

// startReconcile joins the tool's reconciliation queue group, so each
// request reaches one agent of the pool. Every agent can answer any
// request: the journal is the pool's, not the agent's.
func (a *Agent) startReconcile(t *tool) error {
	sub, err := a.nc.QueueSubscribe(fabric.ReconcileSubject(t.name), fabric.ReconcileQueue(t.name),
		func(m *nats.Msg) { a.onReconcile(t, m) })
	if err != nil {
		return fmt.Errorf("workeragent: reconcile subscription for %q: %w", t.name, err)
	}
	t.reconcileSub = sub
	return nil
}

// onReconcile runs on the reconcile subscription's callback goroutine. A
// request that fails authentication, names another tool or has no reply
// subject is counted and dropped: answering it would tell a stranger what
// the journal holds, or answer a question nobody authentic asked. An
// authentic one is answered once, from what this agent runs and what the
// journal (or, for an Idempotent tool, the answer subject) holds. A
// journal that cannot be read is no answer either; the host asks again.
func (a *Agent) onReconcile(t *tool, m *nats.Msg) {
	req, err := a.codec.OpenReconcile(m.Header, m.Data)
	if err == nil && req.Tool != t.name {
		err = fmt.Errorf("%w: reconcile for tool %q on the subject of %q", errWrongSubject, req.Tool, t.name)
	}
	if err == nil && m.Reply == "" {
		err = fmt.Errorf("%w: reconcile request without a reply subject", protocol.ErrInvalidMessage)
	}
	if err != nil {
		a.forged(err, "rejected reconcile request", "tool", t.name)
		return
	}
	ctx, cancel := opContext()
	defer cancel()
	// The header names the host whose events take the session's answers
	// (the one that accepted it), under which an Idempotent call's answer
	// is stored; it is not authenticated, and a wrong one only finds no
	// answer.
	status, err := a.operationStatus(ctx, t, m.Header.Get(fabric.HeaderHost), req.OperationKey)
	if err != nil {
		a.log.Warn("reconcile: journal or stored answer unreadable", "tool", t.name, "request", req.RequestID, "err", err)
		return
	}
	res, err := protocol.NewOperationReconcileResult(req.SessionID, req.RequestID, req.Tool, req.OperationKey, status)
	var answer *nats.Msg
	if err == nil {
		answer, err = a.codec.SealReconciled(res)
	}
	if err != nil {
		// A stored result that no longer validates (say, a payload over
		// today's bounds) is left unanswered rather than misreported.
		a.log.Warn("reconcile: answer not sealed", "tool", t.name, "request", req.RequestID, "err", err)
		return
	}
	if err := m.RespondMsg(answer); err != nil {
		a.log.Warn("reconcile: answer not sent", "tool", t.name, "request", req.RequestID, "err", err)
		return
	}
	a.stats.reconciled.Add(1)
	a.obs.Reconciled(t.name, string(status.State))
}

// operationStatus is what the pool knows of the operation keyed key: a
// call of this agent that holds it is running; otherwise the journal says,
// and for an Idempotent tool, whose calls store their answers on an answer
// subject rather than in the journal, the answer subject under host.
func (a *Agent) operationStatus(ctx context.Context, t *tool, host, key string) (protocol.OperationStatus, error) {
	if a.holds(t, key) {
		return protocol.StatusRunning(), nil
	}
	rec, err := a.cfg.Journal.Get(ctx, key)
	switch {
	case err == nil:
		return journalStatus(rec, time.Now()), nil
	case !errors.Is(err, idempotency.ErrNotFound):
		return protocol.OperationStatus{}, err
	case !t.spec.idempotent || fabric.ValidateHostID(host) != nil:
		return protocol.StatusUnknown(), nil
	}
	stored, found, err := a.lookupAnswer(ctx, host, t.name, key)
	if err != nil {
		return protocol.OperationStatus{}, err
	}
	if !found {
		return protocol.StatusUnknown(), nil
	}
	return answerStatus(stored), nil
}

// holds reports whether an execution of this agent has the tool's call
// keyed key. An Idempotent tool's run writes the journal only when it
// ends, so for it this is the only sign of a run in progress (and only
// on the agent that runs it).
func (a *Agent) holds(t *tool, key string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	for e := range a.running {
		if e.t == t && e.inv.IdempotencyKey == key {
			return true
		}
	}
	return false
}

// journalStatus maps a journal record to the state a reconciliation
// reports. A live lease is running. A stored result is its status, an
// indeterminate one reported failed (the protocol has no such state, and
// its effect is not to be repeated). A lease that lapsed without a result,
// or a claim given back, is unknown: nobody holds the operation and no
// result exists, which is what a later delivery would find too.
func journalStatus(rec idempotency.Record, now time.Time) protocol.OperationStatus {
	switch {
	case rec.State == idempotency.StateRunning && !rec.Expired(now):
		return protocol.StatusRunning()
	case rec.State != idempotency.StateDone || rec.Result == nil:
		return protocol.StatusUnknown()
	}
	return resultStatus(*rec.Result)
}

// answerStatus maps a stored answer (see fabric.LookupAnswer) to the
// state a reconciliation reports, as journalStatus maps the result the
// journal would have held. A stored result's status has the journal's
// names (messageOf maps one onto the other).
func answerStatus(stored protocol.WorkerMessage) protocol.OperationStatus {
	if stored.CancelDisp != nil {
		return protocol.StatusCancelled()
	}
	r := stored.Result
	return resultStatus(idempotency.Result{Status: idempotency.Status(r.Status), Payload: r.Payload, Error: r.Error})
}

// resultStatus maps a terminal result to the state a reconciliation
// reports: an indeterminate one is reported failed (the protocol has no
// such state, and its effect is not to be repeated).
func resultStatus(r idempotency.Result) protocol.OperationStatus {
	switch r.Status {
	case idempotency.StatusSucceeded:
		if r.Payload == nil {
			return protocol.StatusSucceeded(protocol.TextPayload(""))
		}
		return protocol.StatusSucceeded(*r.Payload)
	case idempotency.StatusCancelled:
		return protocol.StatusCancelled()
	case idempotency.StatusIndeterminate:
		return protocol.StatusFailed(withDefault("indeterminate: ", r.Error, "its effect is unknown"))
	}
	return protocol.StatusFailed(withDefault("", r.Error, string(r.Status)))
}

func withDefault(prefix, s, def string) string {
	if s == "" {
		s = def
	}
	return prefix + s
}
