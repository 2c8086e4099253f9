package host

import (
	"container/heap"
	"time"
)

// deadlineHeap orders live operations by deadline so expiry and
// NextDeadline cost O(log n) and O(1) instead of a scan.
type deadlineHeap []*operation

func (h deadlineHeap) Len() int           { return len(h) }
func (h deadlineHeap) Less(i, j int) bool { return h[i].deadline.Before(h[j].deadline) }
func (h deadlineHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIndex = i
	h[j].heapIndex = j
}

func (h *deadlineHeap) Push(x any) {
	op := x.(*operation)
	op.heapIndex = len(*h)
	*h = append(*h, op)
}

func (h *deadlineHeap) Pop() any {
	old := *h
	n := len(old) - 1
	op := old[n]
	old[n] = nil
	op.heapIndex = -1
	*h = old[:n]
	return op
}

func (h *deadlineHeap) add(op *operation) { heap.Push(h, op) }

func (h *deadlineHeap) remove(op *operation) {
	if op.heapIndex >= 0 {
		heap.Remove(h, op.heapIndex)
	}
}

func (h deadlineHeap) peek() (*operation, bool) {
	if len(h) == 0 {
		return nil, false
	}
	return h[0], true
}

// NextDeadline returns the earliest deadline of any live operation, so the
// event loop can arm one timer for ExpireTimedOutTools.
func (r *Runtime) NextDeadline() (time.Time, bool) {
	op, ok := r.deadlines.peek()
	if !ok {
		return time.Time{}, false
	}
	return op.deadline, true
}

// ExpireTimedOutTools resolves every live operation whose deadline has
// passed, queued or claimed, local or external, as a timeout through its
// promise and the audit log. It returns the expired ids in deadline order.
func (r *Runtime) ExpireTimedOutTools() ([]ExternalToolID, *EvalResult) {
	now := r.clock.Now()
	var ids []ExternalToolID
	for {
		op, ok := r.deadlines.peek()
		if !ok || !op.expired(now) {
			break
		}
		ids = append(ids, op.id)
		r.timeout(op, "deadline elapsed")
	}
	return ids, r.finish()
}

// RemainingDeadline returns how long a live operation has left before its
// deadline, measured now; ok is false when it has no deadline or is not
// live. A host publishing an attempt some time after it was claimed (a
// retry after its backoff) hands the worker this, not what was left at
// the claim.
func (r *Runtime) RemainingDeadline(id ExternalToolID) (left time.Duration, ok bool) {
	op := r.ops.get(id)
	if op == nil || !op.hasDeadline() {
		return 0, false
	}
	return max(op.deadline.Sub(r.clock.Now()), 0), true
}
