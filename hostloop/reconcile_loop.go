package hostloop

import (
	"context"
	"time"

	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/protocol"
)

// DefaultReconcileAfter is how long a resumed operation waits for its
// answer before the loop asks the workers about it, when
// LoopConfig.ReconcileAfter is zero.
const DefaultReconcileAfter = 30 * time.Second

// DefaultRedeliveryHorizon is how long after its dispatch an operation's
// invocation may still be delivered, when LoopConfig.RedeliveryHorizon is
// zero: the fabric's default ack wait times its deliveries.
const DefaultRedeliveryHorizon = 150 * time.Second

// reconcileAnswer is a reconciliation's outcome, delivered to the loop.
type reconcileAnswer struct {
	d       *dispatched
	attempt uint32
	res     protocol.OperationReconcileResult
	err     error
}

// scheduleReconcile asks the workers about d after ReconcileAfter, unless
// its answer came first.
func (st *loopState) scheduleReconcile(d *dispatched) { st.reconcileAfter(d, st.cfg.ReconcileAfter) }

// reconcileNow asks the workers about d at the next step. Without anyone
// to ask, a republish under the same key is all there is, and the
// workers' journals keep it from running twice.
func (st *loopState) reconcileNow(d *dispatched) {
	if !st.reconcileAfter(d, 0) {
		st.publish(d, d.inv)
	}
}

// reconcileAfter arms d's reconciliation after wait; false when the
// transport cannot reconcile.
func (st *loopState) reconcileAfter(d *dispatched, wait time.Duration) bool {
	if _, ok := st.cfg.Transport.(Reconciler); !ok {
		return false
	}
	st.timers.push(timerEntry{at: st.now.Add(wait), kind: timerReconcile, d: d, attempt: d.inv.Attempt})
	return true
}

// reconcile asks, off the loop, what became of d, an operation a resumed
// session holds with no answer yet.
func (st *loopState) reconcile(d *dispatched) {
	r := st.cfg.Transport.(Reconciler)
	sid, tool, key, attempt := string(d.s.id), d.inv.Tool, d.inv.IdempotencyKey, d.inv.Attempt
	gone, timeout := st.gone, st.cfg.ArchiveTimeout
	st.bg.Add(1)
	go func() {
		defer st.bg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		res, err := r.Reconcile(ctx, sid, tool, key)
		cancel()
		select {
		case st.reconcileDone <- reconcileAnswer{d: d, attempt: attempt, res: res, err: err}:
		case <-gone:
		}
	}()
}

// reconciled applies a worker's account of d as DecideReconcile says: a
// terminal status is d's answer; an operation still running, or not yet
// past its redelivery horizon, is asked about again later; one nobody
// knows of past it is dispatched again only for an idempotent tool, and
// ends indeterminate otherwise, so no effect can happen twice.
func (st *loopState) reconciled(a reconcileAnswer) {
	d := a.d
	if st.byRequest[d.requestID] != d || d.inv.Attempt != a.attempt {
		return // answered meanwhile
	}
	if a.err != nil {
		st.reject("reconcile", a.err)
		st.scheduleReconcile(d)
		return
	}
	past := st.now.Sub(d.dispatched) >= st.cfg.RedeliveryHorizon
	action, err := DecideReconcile(a.res.Status.State, d.inv.Idempotent, past)
	if err != nil {
		st.reject("reconcile", err)
		st.scheduleReconcile(d)
		return
	}
	st.changedOp(d)
	switch action {
	case ReconcileApply:
		switch s := a.res.Status; s.State {
		case protocol.OperationSucceeded:
			st.complete(d, host.Ok(payloadText(s.Payload)))
		case protocol.OperationFailed:
			st.complete(d, host.Fail(s.Error))
		case protocol.OperationCancelled:
			st.confirmCancel(d)
		}
	case ReconcileRedispatch:
		d.dispatched = st.now
		st.publish(d, d.inv)
		st.scheduleReconcile(d)
	case ReconcileIndeterminate:
		st.complete(d, host.Fail("indeterminate: no worker knows of the operation, and its invocation can no longer be delivered; its effect may have happened and is not repeated"))
	default:
		st.scheduleReconcile(d)
	}
}

// payloadText is a worker payload as the runtime takes an output.
func payloadText(p *protocol.WorkerPayload) string {
	if p == nil {
		return ""
	}
	if p.Format == protocol.FormatJSON {
		return string(p.JSON)
	}
	return p.Text
}
