package hostloop

import (
	"errors"
	"fmt"

	"github.com/splashfabric/splashfabric/protocol"
)

// publishFailed handles a publish of d's attempt that the transport
// refused, at once or after it: it is reported, and published again after
// a backoff, unless the transport can never carry it. Retrying such an
// invocation would hold its session on a call no worker can take, until
// its deadline or for ever, so its operation fails instead, at a timer
// due now: a publish is refused while the session's effects are being
// carried out, which must not take another input meanwhile.
func (st *loopState) publishFailed(d *dispatched, err error) {
	st.reject("publish", err)
	if errors.Is(err, ErrInvocationTooLarge) {
		d.unsendable = err
		st.schedulePublish(d, 0)
		return
	}
	st.schedulePublish(d, st.nextDelay(d))
}

// failUnsendable fails d's operation as a worker's failure would, with
// why it was never dispatched.
func (st *loopState) failUnsendable(d *dispatched) {
	d.answered = true
	res := protocol.Result{
		RequestID: d.requestID(), Attempt: d.op.Inv.Attempt, Status: protocol.ResultFailed,
		Error: fmt.Sprintf("not dispatched: %v", d.unsendable),
	}
	if _, err := d.s.core.Answer(d.op, res, nil); err != nil {
		st.reject(answerReason(err), err)
	}
	st.changedOp(d)
}
