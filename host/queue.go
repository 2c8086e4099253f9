package host

// opQueue is an intrusive FIFO of operations waiting to be claimed or
// pumped. Links live in the operation, so push, pop and removing an op
// cancelled before claim are all O(1) and the queue never holds a
// cancelled op that a claim would have to skip.
type opQueue struct {
	head, tail *operation
	n          int
}

func (q *opQueue) push(op *operation) {
	op.prev, op.next = q.tail, nil
	if q.tail != nil {
		q.tail.next = op
	} else {
		q.head = op
	}
	q.tail = op
	op.queued = true
	q.n++
}

func (q *opQueue) remove(op *operation) {
	if !op.queued {
		return
	}
	if op.prev != nil {
		op.prev.next = op.next
	} else {
		q.head = op.next
	}
	if op.next != nil {
		op.next.prev = op.prev
	} else {
		q.tail = op.prev
	}
	op.prev, op.next, op.queued = nil, nil, false
	q.n--
}
