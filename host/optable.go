package host

// opTable maps ids to live operations in O(1) without a hash map on the
// hot path. Ids are issued in increasing order and most operations finish
// roughly in start order, so live ids sit in a dense window: a slice
// indexed by id-base. An operation that stays live long after its
// neighbours finished (a claimed call whose worker went quiet) would hold
// the window open, so once the window is more than twice the live count
// its oldest live entries move to a small side map. Each operation moves
// at most once, so every method stays amortized O(1) and memory stays
// proportional to the live count.
//
// A plain map keyed by ever-increasing ids is what this replaces: with
// constant churn its tombstones made inserts probe long chains, and the
// per-operation cost grew with the number pending.
type opTable struct {
	win        []*operation // win[head+i] holds id base+i
	head       int
	base       ExternalToolID
	inWin      int // live operations in the window
	stragglers map[ExternalToolID]*operation
}

func (t *opTable) len() int { return t.inWin + len(t.stragglers) }

func (t *opTable) get(id ExternalToolID) *operation {
	if id < t.base {
		return t.stragglers[id]
	}
	i := uint64(id - t.base)
	if i >= uint64(len(t.win)-t.head) {
		return nil
	}
	return t.win[t.head+int(i)]
}

// put adds op, whose id is greater than every id put before.
func (t *opTable) put(op *operation) {
	if t.inWin == 0 && len(t.win) == t.head {
		t.win, t.head, t.base = t.win[:0], 0, op.id
	}
	for t.base+ExternalToolID(len(t.win)-t.head) < op.id {
		t.win = append(t.win, nil) // ids of synchronous calls
	}
	t.win = append(t.win, op)
	t.inWin++
	t.trim()
}

func (t *opTable) remove(id ExternalToolID) {
	if id < t.base {
		delete(t.stragglers, id)
		return
	}
	t.win[t.head+int(id-t.base)] = nil
	t.inWin--
	t.trim()
}

// trim drops finished entries from the front, moves long-lived ones out
// when the window is sparse, and compacts the slice when half is unused.
func (t *opTable) trim() {
	for t.head < len(t.win) {
		op := t.win[t.head]
		if op != nil {
			if len(t.win)-t.head <= 2*t.inWin+64 {
				break
			}
			if t.stragglers == nil {
				t.stragglers = make(map[ExternalToolID]*operation)
			}
			t.stragglers[op.id] = op
			t.inWin--
		}
		t.win[t.head] = nil
		t.head++
		t.base++
	}
	if t.head > 64 && t.head > len(t.win)/2 {
		n := copy(t.win, t.win[t.head:])
		clear(t.win[n:])
		t.win = t.win[:n]
		t.head = 0
	}
}
