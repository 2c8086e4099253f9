package toolproc

import (
	"errors"
	"strconv"
	"strings"

	"github.com/splashfabric/splashfabric/protocol"
)

// readLoop reads the process's frames until stdout ends or a frame poisons
// the session. It is the only reader of ss.open.
func (ss *session) readLoop() {
	lr := newLineReader(ss.proc.stdout, ss.sup.cfg.MaxLineBytes)
	for {
		line, err := lr.next()
		if err != nil {
			if errors.Is(err, errLineTooLong) {
				ss.poison(poison(ReasonTooLong, "a line of more than %d bytes", ss.sup.cfg.MaxLineBytes))
			} else {
				ss.poison(poison(ReasonExited, "stdout ended: %v", err))
			}
			return
		}
		if pe := ss.handle(line); pe != nil {
			ss.poison(pe)
			return
		}
	}
}

// handle authenticates one line and applies it to the call it names.
func (ss *session) handle(line []byte) *PoisonError {
	f, err := protocol.ParseJSONLineLimit(line, ss.sup.cfg.MaxLineBytes)
	if err != nil {
		if errors.Is(err, protocol.ErrFrameTooLarge) {
			return poison(ReasonTooLong, "%v", err)
		}
		return poison(ReasonGarbage, "%v", err)
	}
	msg, err := ss.open.Open(f)
	switch {
	case err == nil:
	case errors.Is(err, protocol.ErrBadTag):
		return poison(ReasonBadTag, "%v", err)
	case errors.Is(err, protocol.ErrWrongRole), errors.Is(err, protocol.ErrInvalidSession):
		return poison(ReasonWrongSession, "%v", err)
	case errors.Is(err, protocol.ErrSequence):
		return poison(ReasonSequence, "%v", err)
	case errors.Is(err, protocol.ErrInvalidMessage):
		return poison(ReasonInvalidMessage, "%v", err)
	default:
		return poison(ReasonGarbage, "%v", err)
	}
	switch msg.Kind {
	case protocol.KindChunk:
		return ss.onChunk(msg.Chunk)
	case protocol.KindResult:
		return ss.onResult(msg.Result)
	case protocol.KindCancelDisposition:
		return ss.onDisposition(msg.CancelDisp)
	}
	return poison(ReasonInvalidMessage, "a tool may not send %q", msg.Kind)
}

// lookup finds the live call a frame names; ss.mu is held.
func (ss *session) lookup(id string) (*call, *PoisonError) {
	c, ok := ss.calls[id]
	if ok {
		return c, nil
	}
	// Ids are issued in order, so one this session issued and no longer
	// lists belongs to a call that has ended: a frame for it contradicts
	// that end.
	if n, err := strconv.ParseUint(strings.TrimPrefix(id, "c"), 10, 64); err == nil && strings.HasPrefix(id, "c") && n >= 1 && n <= ss.next && id == "c"+strconv.FormatUint(n, 10) {
		return nil, poison(ReasonContradictory, "frame for %s after its end", id)
	}
	return nil, poison(ReasonUnknownRequest, "no call %q in flight", truncate(id))
}

func (ss *session) onChunk(m *protocol.Chunk) *PoisonError {
	ss.mu.Lock()
	c, pe := ss.lookup(m.RequestID)
	switch {
	case pe != nil:
	case c.ended:
		pe = poison(ReasonContradictory, "chunk for %s after its end", c.id)
	case m.Sequence != c.chunks+1:
		pe = poison(ReasonSequence, "chunk %d of %s, want %d", m.Sequence, c.id, c.chunks+1)
	}
	if pe != nil {
		ss.mu.Unlock()
		return pe
	}
	c.chunks++
	release := c.req.Chunk
	ss.mu.Unlock()
	// Released outside the lock: the callback may publish. The reader is
	// the only goroutine that delivers chunks, so their order holds.
	if release != nil && release(m.Text) == nil {
		return nil
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	c.refused++
	if c.refused > ss.sup.cfg.FloodSlack {
		return poison(ReasonFlood, "call %s kept streaming past its bounds (%d chunks refused)", c.id, c.refused)
	}
	return nil
}

func (ss *session) onResult(m *protocol.Result) *PoisonError {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	c, pe := ss.lookup(m.RequestID)
	switch {
	case pe != nil:
		return pe
	case c.ended:
		return poison(ReasonContradictory, "second terminal frame for %s", c.id)
	case m.Attempt != c.req.Invoke.Attempt:
		return poison(ReasonContradictory, "result of attempt %d for %s, invoked as %d", m.Attempt, c.id, c.req.Invoke.Attempt)
	}
	c.answered = true
	ss.answered = true
	ss.end(c, Outcome{Kind: Answered, Result: *m})
	return nil
}

func (ss *session) onDisposition(m *protocol.CancelReply) *PoisonError {
	ss.mu.Lock()
	c, pe := ss.lookup(m.RequestID)
	switch {
	case pe != nil:
	case !c.cancelSent:
		pe = poison(ReasonContradictory, "disposition for %s, which was not cancelled", c.id)
	case c.disposed:
		pe = poison(ReasonContradictory, "second disposition for %s", c.id)
	case m.Attempt != c.req.Invoke.Attempt:
		pe = poison(ReasonContradictory, "disposition of attempt %d for %s, invoked as %d", m.Attempt, c.id, c.req.Invoke.Attempt)
	case m.Disposition == protocol.CancelTooLate && !c.answered:
		pe = poison(ReasonContradictory, "too_late for %s before its result", c.id)
	case m.Disposition != protocol.CancelTooLate && c.answered:
		pe = poison(ReasonContradictory, "%s for %s after its result", m.Disposition, c.id)
	}
	if pe != nil {
		ss.mu.Unlock()
		return pe
	}
	c.disposed = true
	tell := c.req.Disposition
	ss.mu.Unlock()
	switch m.Disposition {
	case protocol.CancelAcknowledged, protocol.CancelTooLate, protocol.CancelUnsupported:
	default:
		return poison(ReasonInvalidMessage, "disposition %q", truncate(string(m.Disposition)))
	}
	// Told before the call's end is visible, so a caller that sees the
	// end has seen the disposition too.
	if tell != nil {
		tell(m.Disposition)
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	switch m.Disposition {
	case protocol.CancelAcknowledged:
		ss.answered = true
		ss.end(c, Outcome{Kind: CancelAcknowledged})
	case protocol.CancelTooLate:
		ss.drop(c)
	}
	return nil
}
