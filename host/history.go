package host

// finishedLog keeps the last few finished operations so Operation can
// still describe them and refusals can name their final state. It is a
// bounded ring: a long session does not grow with the operations it ran.
// Ids are never reused, so an evicted id is still known to be finished.
type finishedLog struct {
	recs  map[ExternalToolID]terminalRecord
	ring  []ExternalToolID
	limit int
	next  int // oldest entry once the ring is full
}

func (l *finishedLog) init(limit int) {
	if limit <= 0 {
		limit = DefaultTerminalHistory
	}
	l.limit = limit
	l.recs = make(map[ExternalToolID]terminalRecord)
}

func (l *finishedLog) add(op *operation) {
	if len(l.ring) < l.limit {
		l.ring = append(l.ring, op.id)
	} else {
		delete(l.recs, l.ring[l.next])
		l.ring[l.next] = op.id
		l.next = (l.next + 1) % l.limit
	}
	l.recs[op.id] = terminalRecord{tool: op.tool, callIndex: op.callIndex, attempt: op.attempt, state: op.state}
}

func (l *finishedLog) get(id ExternalToolID) (terminalRecord, bool) {
	rec, ok := l.recs[id]
	return rec, ok
}
