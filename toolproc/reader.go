package toolproc

import (
	"errors"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/splashfabric/splashfabric/protocol"
)

// readLoop reads the process's frames until stdout ends or a frame poisons
// the session. It is the only reader of ss.open.
//
// A poison names the line by its number and size only: the bytes of a
// line the session refuses are the tool's, and they never reach an error
// (which goes to the audit and the script) or the log.
func (ss *session) readLoop() {
	lr := newLineReader(ss.proc.stdout, ss.sup.cfg.MaxLineBytes)
	for n := 1; ; n++ {
		line, err := lr.next()
		if err != nil {
			if errors.Is(err, errLineTooLong) {
				pe := poison(ReasonTooLong, "line %d: more than %d bytes", n, ss.sup.cfg.MaxLineBytes)
				pe.Line, pe.Bytes = n, ss.sup.cfg.MaxLineBytes+1
				ss.poison(pe)
				return
			}
			ss.stdoutEnded(err)
			return
		}
		if pe := ss.handle(line); pe != nil {
			pe.Line, pe.Bytes = n, len(line)
			pe.Detail = "line " + strconv.Itoa(n) + " (" + strconv.Itoa(len(line)) + " bytes): " + pe.Detail
			ss.poison(pe)
			return
		}
	}
}

// stdoutEnded handles the end of stdout. A process that exits closes it
// a moment before the reaper learns how it exited, which may name a
// limit, so the reaper poisons the session; one that closes stdout and
// lives on is given up here.
func (ss *session) stdoutEnded(err error) {
	t := time.NewTimer(ss.sup.cfg.StopGrace)
	defer t.Stop()
	select {
	case <-ss.exited:
	case <-t.C:
		what := "closed its stdout"
		if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
			what = "stdout failed"
		}
		ss.poison(poison(ReasonExited, "the process %s and lives on", what))
	}
}

// handle authenticates one line and applies it to the call it names. Its
// PoisonError's detail says what was wrong in the session's own words.
func (ss *session) handle(line []byte) *PoisonError {
	f, err := protocol.ParseJSONLineLimit(line, ss.sup.cfg.MaxLineBytes)
	if err != nil {
		if errors.Is(err, protocol.ErrFrameTooLarge) {
			return poison(ReasonTooLong, "a frame over the size limit")
		}
		return poison(ReasonGarbage, "not a frame")
	}
	msg, err := ss.open.Open(f)
	switch {
	case err == nil:
	case errors.Is(err, protocol.ErrBadTag):
		return poison(ReasonBadTag, "a frame whose tag does not verify")
	case errors.Is(err, protocol.ErrWrongRole), errors.Is(err, protocol.ErrInvalidSession):
		return poison(ReasonWrongSession, "a frame of another session or role")
	case errors.Is(err, protocol.ErrSequence):
		return poison(ReasonSequence, "a frame out of sequence")
	case errors.Is(err, protocol.ErrInvalidMessage):
		return poison(ReasonInvalidMessage, "an invalid message")
	default:
		return poison(ReasonGarbage, "not a frame")
	}
	switch msg.Kind {
	case protocol.KindChunk:
		return ss.onChunk(msg.Chunk)
	case protocol.KindResult:
		return ss.onResult(msg.Result)
	case protocol.KindCancelDisposition:
		return ss.onDisposition(msg.CancelDisp)
	}
	return poison(ReasonInvalidMessage, "a message a tool may not send")
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
	return nil, poison(ReasonUnknownRequest, "a frame for no call in flight")
}

func (ss *session) onChunk(m *protocol.Chunk) *PoisonError {
	ss.mu.Lock()
	c, pe := ss.lookup(m.RequestID)
	switch {
	case pe != nil:
	case c.ended:
		pe = poison(ReasonContradictory, "chunk for %s after its end", c.id)
	case m.Sequence != c.chunks+1:
		pe = poison(ReasonSequence, "a chunk of %s out of order (want chunk %d)", c.id, c.chunks+1)
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
		return poison(ReasonContradictory, "a result for %s of another attempt than %d", c.id, c.req.Invoke.Attempt)
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
		pe = poison(ReasonContradictory, "a disposition for %s of another attempt than %d", c.id, c.req.Invoke.Attempt)
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
	c.unsupported = m.Disposition == protocol.CancelUnsupported
	tell := c.req.Disposition
	ss.mu.Unlock()
	switch m.Disposition {
	case protocol.CancelAcknowledged, protocol.CancelTooLate, protocol.CancelUnsupported:
	default:
		return poison(ReasonInvalidMessage, "an unknown disposition for %s", c.id)
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
