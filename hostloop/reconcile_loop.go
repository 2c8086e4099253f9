package hostloop

import (
	"context"
	"time"

	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/workflow"
)

// DefaultReconcileAfter is how long an operation waits for its answer
// before the loop asks the workers about it, when LoopConfig.ReconcileAfter
// is zero.
const DefaultReconcileAfter = 30 * time.Second

// DefaultRedeliveryHorizon is how long after its dispatch an operation's
// invocation may still be delivered, when LoopConfig.RedeliveryHorizon is
// zero: the fabric's default ack wait times its deliveries.
const DefaultRedeliveryHorizon = 150 * time.Second

// reconcileAnswer is a reconciliation's outcome, delivered to the loop.
type reconcileAnswer struct {
	d       *dispatched
	attempt uint32
	// queued: the transport says no worker has been handed it yet.
	queued bool
	res    protocol.OperationReconcileResult
	err    error
}

// scheduleReconcile asks the workers about d after ReconcileAfter, unless
// its answer came first: a live operation whose worker went silent is
// found, not only a resumed one.
func (st *loopState) scheduleReconcile(d *dispatched) {
	d.reconcileWait = st.cfg.ReconcileAfter
	st.reconcileAfter(d, d.reconcileWait)
}

// maxReconcileBackoff bounds how far apart, in ReconcileAfters, the
// questions about one long call still running grow.
const maxReconcileBackoff = 16

// reconcileAgain asks about d again later: each time it is found still
// queued or running, twice as late as the time before, up to
// maxReconcileBackoff ReconcileAfters, so thousands of calls that run for
// hours cost their pools a trickle of questions, not a flood.
func (st *loopState) reconcileAgain(d *dispatched) {
	d.reconcileWait = min(2*max(d.reconcileWait, st.cfg.ReconcileAfter), maxReconcileBackoff*st.cfg.ReconcileAfter)
	st.reconcileAfter(d, d.reconcileWait)
}

// reconcileNow asks the workers about d at the next step.
func (st *loopState) reconcileNow(d *dispatched) { st.reconcileAfter(d, 0) }

// reconcileAfter arms d's reconciliation after wait.
func (st *loopState) reconcileAfter(d *dispatched, wait time.Duration) {
	st.timers.push(timerEntry{at: st.now.Add(wait), kind: timerReconcile, d: d, attempt: d.op.Inv.Attempt})
}

// reconcile asks, off the loop, what became of d, an operation with no
// answer yet: first whether it is still queued for a worker, then the
// tool's workers.
func (st *loopState) reconcile(d *dispatched) {
	tr := st.cfg.Transport
	sid, tool, key, attempt, req := string(d.s.id), d.op.Inv.Tool, d.op.Inv.IdempotencyKey, d.op.Inv.Attempt, d.requestID()
	gone, timeout := st.gone, st.cfg.ArchiveTimeout
	st.bg.Add(1)
	go func() {
		defer st.bg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		a := reconcileAnswer{d: d, attempt: attempt}
		if w, err := tr.Waiting(ctx, []string{req}); err == nil && w[req] {
			a.queued = true
		}
		if !a.queued {
			a.res, a.err = tr.Reconcile(ctx, sid, tool, key)
		}
		select {
		case st.reconcileDone <- a:
		case <-gone:
		}
	}()
}

// reconciled applies a worker's account of d as the session's core
// decides (workflow.DecideReconcile): a terminal status is d's answer; an
// operation still queued or running, or not yet past its redelivery
// horizon, is asked about again later; one nobody knows of past it is
// dispatched again only for an idempotent tool whose cancellation was not
// asked, and ends indeterminate otherwise, so no effect can happen twice.
func (st *loopState) reconciled(a reconcileAnswer) {
	d := a.d
	if st.byRequest[d.requestID()] != d || d.op.Inv.Attempt != a.attempt {
		return // answered meanwhile
	}
	if a.queued {
		st.reconcileAgain(d)
		return
	}
	if a.err != nil {
		st.reject("reconcile", a.err)
		st.scheduleReconcile(d)
		return
	}
	if st.later(d.s, func() { st.reconciled(a) }) {
		return
	}
	past := st.now.Sub(d.dispatched) >= st.cfg.RedeliveryHorizon
	action, err := d.s.core.Reconciled(d.op, a.res.Status, past)
	st.changedOp(d)
	switch {
	case err != nil:
		st.reject("reconcile", err)
		st.scheduleReconcile(d)
	case action == workflow.ReconcileWait && a.res.Status.State == protocol.OperationUnknown:
		// Nobody holds it, and a delivery may still come: asked again no
		// later than when none can.
		left := st.cfg.RedeliveryHorizon - st.now.Sub(d.dispatched)
		st.reconcileAfter(d, max(min(st.cfg.ReconcileAfter, left), 0))
	case action == workflow.ReconcileWait:
		st.reconcileAgain(d)
	case action == workflow.ReconcileRedispatch:
		d.dispatched = st.now
	}
}
