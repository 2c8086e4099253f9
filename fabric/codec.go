package fabric

import (
	"fmt"
	"sync"

	"github.com/nats-io/nats.go"

	"github.com/splashfabric/splashfabric/protocol"
)

// Codec seals and opens the frames of the fabric under one key and checks
// that each frame is bound to the message it carries: the session is the
// request id, the sender role fits the kind, and the sequence fits the
// attempt (see InvokeSeq, CancelSeq, WorkerSeq). It keeps no replay window;
// the host's transport (package hostnats) keeps one for worker frames, and
// workers rely on the idempotency journal.
//
// A Codec is safe for concurrent use: it keeps its protocol.Signers, which
// are not, in a sync.Pool, so each call borrows one and no frame pays for a
// fresh HMAC state.
type Codec struct {
	maxFrame int
	signers  sync.Pool
}

// NewCodec returns a Codec for key; a zero key fails with
// protocol.ErrInvalidKey. Frames larger than protocol.DefaultMaxFrameBytes
// are refused when opened.
func NewCodec(key protocol.SessionKey) (*Codec, error) {
	if key.IsZero() {
		return nil, fmt.Errorf("%w: zero SessionKey", protocol.ErrInvalidKey)
	}
	c := &Codec{maxFrame: protocol.DefaultMaxFrameBytes}
	c.signers.New = func() any { return protocol.NewSigner(key) }
	return c, nil
}

func (c *Codec) signer() *protocol.Signer { return c.signers.Get().(*protocol.Signer) }

// sealFrame validates and seals msg as one frame.
func (c *Codec) sealFrame(sessionID string, role protocol.SessionRole, seq uint64, msg protocol.WorkerMessage) (protocol.Frame, error) {
	if err := checkHeaderSession(sessionID); err != nil {
		return protocol.Frame{}, err
	}
	s := c.signer()
	f, err := s.Seal(sessionID, role, seq, msg)
	c.signers.Put(s)
	return f, err
}

// seal seals msg as a NATS message (see HeaderSession); the caller sets
// the subject.
func (c *Codec) seal(sessionID string, role protocol.SessionRole, seq uint64, msg protocol.WorkerMessage) (*nats.Msg, error) {
	f, err := c.sealFrame(sessionID, role, seq, msg)
	if err != nil {
		return nil, err
	}
	return FrameMsg(f), nil
}

// open reads a frame from role out of a NATS message's headers and body
// and authenticates it.
func (c *Codec) open(h nats.Header, body []byte, role protocol.SessionRole) (protocol.Frame, protocol.WorkerMessage, error) {
	f, err := parseFrameMsg(h, body, c.maxFrame)
	if err != nil {
		return protocol.Frame{}, protocol.WorkerMessage{}, forged(err)
	}
	return c.verify(f, role)
}

// verify authenticates f as a frame from role. The role is checked before
// the tag, so a reflected frame costs no HMAC.
func (c *Codec) verify(f protocol.Frame, role protocol.SessionRole) (protocol.Frame, protocol.WorkerMessage, error) {
	if f.Role != role {
		return protocol.Frame{}, protocol.WorkerMessage{}, forged(fmt.Errorf("%w: frame from %s, want %s", protocol.ErrWrongRole, f.Role, role))
	}
	s := c.signer()
	msg, err := s.Verify(f)
	c.signers.Put(s)
	if err != nil {
		return protocol.Frame{}, protocol.WorkerMessage{}, forged(err)
	}
	return f, msg, nil
}

// forged marks err as a rejected frame while keeping its protocol sentinel.
func forged(err error) error { return fmt.Errorf("%w: %w", ErrForged, err) }

func sessionMismatch(session, requestID string) error {
	return forged(fmt.Errorf("%w: session %q carries request %q", protocol.ErrInvalidSession, truncate(session), truncate(requestID)))
}

func seqMismatch(seq, want uint64) error {
	return forged(fmt.Errorf("%w: seq %d, want %d", protocol.ErrSequence, seq, want))
}

func wrongKind(got protocol.MessageKind, want string) error {
	return forged(fmt.Errorf("%w: kind %q, want %s", protocol.ErrInvalidMessage, truncate(string(got)), want))
}

// SealInvoke seals inv as the host's frame InvokeSeq(inv.Attempt) of
// session inv.RequestID.
func (c *Codec) SealInvoke(inv protocol.Invoke) (*nats.Msg, error) {
	if err := checkAttempt(inv.Attempt); err != nil {
		return nil, err
	}
	return c.seal(inv.RequestID, protocol.RoleHost, InvokeSeq(inv.Attempt), protocol.InvokeMessage(inv))
}

// OpenInvoke authenticates an invocation frame: sealed by a host, an
// invoke, its session equal to its request id and its sequence equal to
// InvokeSeq of its attempt. Every rejection wraps ErrForged.
func (c *Codec) OpenInvoke(h nats.Header, body []byte) (protocol.Invoke, error) {
	f, msg, err := c.open(h, body, protocol.RoleHost)
	if err != nil {
		return protocol.Invoke{}, err
	}
	if msg.Kind != protocol.KindInvoke {
		return protocol.Invoke{}, wrongKind(msg.Kind, "invoke")
	}
	inv := *msg.Invoke
	if f.SessionID != inv.RequestID {
		return protocol.Invoke{}, sessionMismatch(f.SessionID, inv.RequestID)
	}
	if inv.Attempt == 0 || f.Sequence != InvokeSeq(inv.Attempt) {
		return protocol.Invoke{}, seqMismatch(f.Sequence, InvokeSeq(max(inv.Attempt, 1)))
	}
	return inv, nil
}

// SealCancel seals cancel as the host's frame CancelSeq(cancel.Attempt) of
// session cancel.RequestID.
func (c *Codec) SealCancel(cancel protocol.Cancel) (*nats.Msg, error) {
	if err := checkAttempt(cancel.Attempt); err != nil {
		return nil, err
	}
	return c.seal(cancel.RequestID, protocol.RoleHost, CancelSeq(cancel.Attempt), protocol.CancelMessage(cancel))
}

// OpenCancel authenticates a cancel frame as OpenInvoke does an invocation.
func (c *Codec) OpenCancel(h nats.Header, body []byte) (protocol.Cancel, error) {
	f, msg, err := c.open(h, body, protocol.RoleHost)
	if err != nil {
		return protocol.Cancel{}, err
	}
	return boundCancel(f, msg)
}

// SealCancelRecord seals cancel as SealCancel does, laid out as one JSON
// line (protocol.Frame.ToJSONLine): the host's cancel record in
// BucketCancel, where a value carries no headers.
func (c *Codec) SealCancelRecord(cancel protocol.Cancel) ([]byte, error) {
	if err := checkAttempt(cancel.Attempt); err != nil {
		return nil, err
	}
	f, err := c.sealFrame(cancel.RequestID, protocol.RoleHost, CancelSeq(cancel.Attempt), protocol.CancelMessage(cancel))
	if err != nil {
		return nil, err
	}
	return f.ToJSONLine()
}

// OpenCancelRecord authenticates a cancel record read from BucketCancel as
// OpenCancel does a cancel frame. A record over the frame limit is refused
// before it is parsed.
func (c *Codec) OpenCancelRecord(data []byte) (protocol.Cancel, error) {
	f, err := protocol.ParseJSONLineLimit(data, c.maxFrame)
	if err != nil {
		return protocol.Cancel{}, forged(err)
	}
	f, msg, err := c.verify(f, protocol.RoleHost)
	if err != nil {
		return protocol.Cancel{}, err
	}
	return boundCancel(f, msg)
}

// boundCancel checks that an authenticated frame carries a cancel bound to
// its session and sequence.
func boundCancel(f protocol.Frame, msg protocol.WorkerMessage) (protocol.Cancel, error) {
	if msg.Kind != protocol.KindCancel {
		return protocol.Cancel{}, wrongKind(msg.Kind, "cancel")
	}
	cancel := *msg.Cancel
	if f.SessionID != cancel.RequestID {
		return protocol.Cancel{}, sessionMismatch(f.SessionID, cancel.RequestID)
	}
	if cancel.Attempt == 0 || f.Sequence != CancelSeq(cancel.Attempt) {
		return protocol.Cancel{}, seqMismatch(f.Sequence, CancelSeq(max(cancel.Attempt, 1)))
	}
	return cancel, nil
}

// SealStreamDenied seals d as the host's frame StreamDeniedSeq(d.Attempt)
// of session d.RequestID.
func (c *Codec) SealStreamDenied(d protocol.StreamDenied) (*nats.Msg, error) {
	if err := checkAttempt(d.Attempt); err != nil {
		return nil, err
	}
	return c.seal(d.RequestID, protocol.RoleHost, StreamDeniedSeq(d.Attempt), protocol.StreamDeniedMessage(d))
}

// OpenControl authenticates a frame a host sends a running call on its
// tool's control subject: a cancel (checked as OpenCancel does) or a
// stream denial, bound the same way to its request and attempt. Every
// rejection wraps ErrForged.
func (c *Codec) OpenControl(h nats.Header, body []byte) (protocol.WorkerMessage, error) {
	f, msg, err := c.open(h, body, protocol.RoleHost)
	if err != nil {
		return protocol.WorkerMessage{}, err
	}
	switch msg.Kind {
	case protocol.KindCancel:
		cancel := *msg.Cancel
		if f.SessionID != cancel.RequestID {
			return protocol.WorkerMessage{}, sessionMismatch(f.SessionID, cancel.RequestID)
		}
		if cancel.Attempt == 0 || f.Sequence != CancelSeq(cancel.Attempt) {
			return protocol.WorkerMessage{}, seqMismatch(f.Sequence, CancelSeq(max(cancel.Attempt, 1)))
		}
	case protocol.KindStreamDenied:
		d := *msg.Denied
		if f.SessionID != d.RequestID {
			return protocol.WorkerMessage{}, sessionMismatch(f.SessionID, d.RequestID)
		}
		if f.Sequence != StreamDeniedSeq(d.Attempt) {
			return protocol.WorkerMessage{}, seqMismatch(f.Sequence, StreamDeniedSeq(d.Attempt))
		}
	default:
		return protocol.WorkerMessage{}, wrongKind(msg.Kind, "cancel or stream_denied")
	}
	return msg, nil
}

// SealWorker seals msg as a worker's frame k (from 1) of attempt of
// requestID. msg must be a chunk, result or cancel disposition of that
// request (and, where the message says, of that attempt); anything else
// is refused before sealing, so a worker cannot sign a frame the host
// would reject.
func (c *Codec) SealWorker(requestID string, attempt, k uint32, msg protocol.WorkerMessage) (*nats.Msg, error) {
	if err := checkWorkerSeq(attempt, k); err != nil {
		return nil, err
	}
	reqID, msgAttempt, err := msg.WorkerBinding()
	if err != nil {
		return nil, err
	}
	if reqID != requestID {
		return nil, fmt.Errorf("%w: message for request %q sealed as %q", protocol.ErrInvalidSession, truncate(reqID), truncate(requestID))
	}
	if msgAttempt != 0 && msgAttempt != attempt {
		return nil, fmt.Errorf("%w: message of attempt %d sealed as attempt %d", ErrInvalidAttempt, msgAttempt, attempt)
	}
	return c.seal(requestID, protocol.RoleWorker, WorkerSeq(attempt, k), msg)
}

// OpenWorker authenticates a worker frame: sealed by a worker, a chunk,
// result or cancel disposition, its session equal to the request id it
// carries, and its sequence a WorkerSeq whose attempt matches the
// message's. It returns the sequence for the caller's replay window.
func (c *Codec) OpenWorker(h nats.Header, body []byte) (protocol.WorkerMessage, uint64, error) {
	f, msg, err := c.open(h, body, protocol.RoleWorker)
	if err != nil {
		return protocol.WorkerMessage{}, 0, err
	}
	reqID, msgAttempt, err := msg.WorkerBinding()
	if err != nil {
		return protocol.WorkerMessage{}, 0, forged(err)
	}
	if f.SessionID != reqID {
		return protocol.WorkerMessage{}, 0, sessionMismatch(f.SessionID, reqID)
	}
	attempt, k := SplitWorkerSeq(f.Sequence)
	if attempt == 0 || k == 0 || (msgAttempt != 0 && attempt != msgAttempt) {
		return protocol.WorkerMessage{}, 0, seqMismatch(f.Sequence, WorkerSeq(max(msgAttempt, 1), max(k, 1)))
	}
	return msg, f.Sequence, nil
}
