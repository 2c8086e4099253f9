package splashtool

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/splashfabric/splashfabric/protocol"
)

// session is one ServeConn. The read loop runs on ServeConn's goroutine and
// is the only user of opener; every call runs on its own goroutine, counted
// by wg.
//
// There is one mutex, mu. It guards the outbound authenticator together
// with the write, so sequence order is write order, and the call table, so
// that "is this call still running" and "write its terminal frame" are one
// step: a cancel either finds the call running or finds its result written,
// never something in between. Nothing else is locked while mu is held.
type session struct {
	h           Handler
	cancellable bool
	w           io.Writer
	opener      *protocol.SessionAuthenticator // read loop only
	wg          sync.WaitGroup                 // call goroutines

	mu     sync.Mutex
	sealer *protocol.SessionAuthenticator // guarded by mu
	calls  map[string]*Call               // guarded by mu: calls not yet answered
	closed error                          // guarded by mu: why no frame may be written any more
}

// read runs the read loop until in ends (nil) or a frame is refused.
func (s *session) read(ctx context.Context, in io.Reader) error {
	sc := bufio.NewScanner(in)
	// One byte more than the limit, so a line of exactly the limit still
	// fits with its newline and a longer one is refused before parsing.
	sc.Buffer(make([]byte, 0, 64<<10), protocol.DefaultMaxFrameBytes+1)
	sc.Split(splitLines)
	for n := 1; sc.Scan(); n++ {
		if err := s.receive(ctx, sc.Bytes()); err != nil {
			return fmt.Errorf("splashtool: inbound frame %d: %w", n, err)
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return fmt.Errorf("splashtool: %w: line over %d bytes", protocol.ErrFrameTooLarge, protocol.DefaultMaxFrameBytes)
		}
		return fmt.Errorf("splashtool: reading frames: %w", err)
	}
	return nil
}

// splitLines splits on '\n' only: bufio.ScanLines would also drop a '\r',
// accepting a spelling the protocol does not have.
func splitLines(data []byte, atEOF bool) (int, []byte, error) {
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		return i + 1, data[:i], nil
	}
	if atEOF && len(data) > 0 {
		return len(data), data, nil // a cut-off last line; it will not verify
	}
	return 0, nil, nil
}

// receive authenticates one line and acts on it.
func (s *session) receive(ctx context.Context, line []byte) error {
	f, err := protocol.ParseJSONLine(line)
	if err != nil {
		return err
	}
	msg, err := s.opener.Open(f)
	if err != nil {
		return err
	}
	switch msg.Kind {
	case protocol.KindInvoke:
		return s.start(ctx, *msg.Invoke)
	case protocol.KindCancel:
		return s.cancel(*msg.Cancel)
	}
	return fmt.Errorf("%w: kind %q", ErrUnexpectedMessage, msg.Kind)
}

// start runs a new call on its own goroutine.
func (s *session) start(ctx context.Context, v protocol.Invoke) error {
	c := newCall(s, v)
	ctx, c.cancel = context.WithCancelCause(ctx)
	c.release = func() {}
	if !c.Deadline.IsZero() {
		ctx, c.release = context.WithDeadline(ctx, c.Deadline)
	}
	s.mu.Lock()
	err := s.closed
	if _, dup := s.calls[v.RequestID]; dup && err == nil {
		err = fmt.Errorf("%w: second invoke for running request %q", ErrUnexpectedMessage, v.RequestID)
	}
	if err == nil {
		s.calls[v.RequestID] = c
	}
	s.mu.Unlock()
	if err != nil {
		c.release()
		c.cancel(nil)
		return err
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		c.run(ctx, s.h)
	}()
	return nil
}

// cancel answers a cancel: at once for a call already answered (too_late)
// or a tool that cannot stop (unsupported); for a cancellable tool the
// disposition waits for the handler (see finish).
func (s *session) cancel(v protocol.Cancel) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, running := s.calls[v.RequestID]
	switch {
	case !running:
		s.replyLocked(v.RequestID, v.Attempt, protocol.CancelTooLate)
	case c.cancelSeen:
		return fmt.Errorf("%w: second cancel for request %q", ErrUnexpectedMessage, v.RequestID)
	case !s.cancellable:
		c.cancelSeen = true
		s.replyLocked(c.RequestID, c.Attempt, protocol.CancelUnsupported)
	default:
		c.cancelSeen, c.cancelled = true, true
		c.cancel(ErrCancelled)
	}
	return nil
}

// finish writes a call's terminal frames: the acknowledgement of a cancel
// the handler honoured, or its result, followed by too_late when a cancel
// arrived that the handler did not honour.
func (s *session) finish(c *Call, out Output, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.calls, c.RequestID)
	c.done = true
	if c.cancelled && isAck(err) {
		s.replyLocked(c.RequestID, c.Attempt, protocol.CancelAcknowledged)
		return
	}
	// A write error closes the session, which is all there is to do: the
	// host has stopped listening.
	_ = s.sendLocked(protocol.ResultMessage(result(c, out, err)))
	if c.cancelled {
		s.replyLocked(c.RequestID, c.Attempt, protocol.CancelTooLate)
	}
}

func (s *session) replyLocked(requestID string, attempt uint32, d protocol.CancelDisposition) {
	_ = s.sendLocked(protocol.CancelReplyMessage(protocol.CancelReply{
		RequestID: requestID, Attempt: attempt, Disposition: d,
	}))
}

// sendLocked seals msg as the next frame and writes it. Once a write has
// failed or the session was closed it writes nothing more: a frame after a
// gap would be refused anyway, and after a bad inbound frame the tool
// answers nothing.
func (s *session) sendLocked(msg protocol.WorkerMessage) error {
	if s.closed != nil {
		return s.closed
	}
	f, err := s.sealer.Seal(msg)
	if err != nil {
		return err // an invalid message spends no sequence number
	}
	line, err := f.ToJSONLine()
	if err != nil {
		return err
	}
	if _, err := s.w.Write(line); err != nil {
		s.closeLocked(fmt.Errorf("splashtool: writing a frame: %w", err))
		return s.closed
	}
	return nil
}

// closeLocked stops all writing and cancels every running call with cause.
func (s *session) closeLocked(cause error) {
	if s.closed != nil {
		return
	}
	s.closed = cause
	for _, c := range s.calls {
		c.cancel(cause)
	}
}
