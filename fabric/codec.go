package fabric

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"strconv"
	"sync"

	"github.com/nats-io/nats.go"

	"github.com/splashfabric/splashfabric/protocol"

	"github.com/splashfabric/splashfabric/internal/clip"
)

// Codec seals and opens the frames of the fabric under one key ring and
// checks that each frame is bound to the message it carries: the session
// is the request id, the sender role fits the kind, and the sequence fits
// the attempt (see InvokeSeq, CancelSeq, WorkerSeq). It seals with the
// ring's current key and names it in HeaderKey; it opens a frame with the
// key that header names, so a ring rotated since still opens what its
// other keys sealed. It keeps no replay window; the host's transport
// (package hostnats) keeps one for worker frames, and workers rely on the
// idempotency journal.
//
// A Codec is safe for concurrent use: it keeps its protocol.Signers, which
// are not, in a sync.Pool per key, so each call borrows one and no frame
// pays for a fresh HMAC state.
type Codec struct {
	maxFrame int
	// msgIDs holds HMAC states keyed for the message ids of worker events
	// (EventMsgID), under a key NewCodec derives from the current key.
	msgIDs sync.Pool
	// sealID names the current key, which seals; signers holds one pool
	// per key of the ring, ids in order (the current key first). Both
	// are written by NewCodec only.
	sealID  string
	signers []keySigners
}

// keySigners are the signers of one key of the ring.
type keySigners struct {
	id   string
	pool *sync.Pool
}

// NewCodec returns a Codec for keys: a ring, or a single key (a ring of
// one). A zero key or an empty ring fails with protocol.ErrInvalidKey.
// Frames larger than protocol.DefaultMaxFrameBytes are refused when
// opened.
func NewCodec(keys protocol.Keys) (*Codec, error) {
	if keys == nil {
		return nil, fmt.Errorf("%w: no key", protocol.ErrInvalidKey)
	}
	ring := keys.Ring()
	if ring.IsZero() {
		return nil, fmt.Errorf("%w: zero SessionKey", protocol.ErrInvalidKey)
	}
	c := &Codec{maxFrame: protocol.DefaultMaxFrameBytes}
	var current protocol.SessionKey
	c.sealID, current = ring.Current()
	raw := current.Bytes()
	m := hmac.New(sha256.New, raw[:])
	m.Write([]byte(msgIDLabel))
	msgIDKey := m.Sum(nil)
	c.msgIDs.New = func() any { return hmac.New(sha256.New, msgIDKey) }
	for _, rk := range ring.Keys() {
		key := rk.Key
		c.signers = append(c.signers, keySigners{id: rk.ID, pool: &sync.Pool{New: func() any { return protocol.NewSigner(key) }}})
	}
	return c, nil
}

// msgIDLabel derives the message id key from a ring's current key, apart
// from every other use of it.
const msgIDLabel = "splash-fabric event message id v1"

// EventMsgID is the Nats-Msg-Id of a terminal event,
// "r/<request>/<attempt>/<kind>/<tag>", so a worker that sends the same
// answer twice stores it once. JetStream dedupes message ids across the
// whole events stream, whatever the subject, so an id anyone can compute
// would let one pool publish first under the id of another pool's answer
// and have the genuine answer dropped as its duplicate: tag is 16 hex
// digits of an HMAC, under a key derived from the ring's current key, of
// the rest, which only a holder of the pool's ring can compute.
func (c *Codec) EventMsgID(requestID string, attempt uint32, kind protocol.MessageKind) string {
	return c.tagged("r/" + requestID + "/" + strconv.FormatUint(uint64(attempt), 10) + "/" + string(kind))
}

// ChunkMsgID is the Nats-Msg-Id of worker frame k of an attempt when that
// frame is a chunk, "r/<request>/<attempt>/chunk-<k>/<tag>" (see
// EventMsgID): a republish of the same frame is stored once, and the id
// never equals a terminal event's.
func (c *Codec) ChunkMsgID(requestID string, attempt, k uint32) string {
	return c.EventMsgID(requestID, attempt, protocol.MessageKind("chunk-"+strconv.FormatUint(uint64(k), 10)))
}

func (c *Codec) tagged(id string) string {
	m := c.msgIDs.Get().(hash.Hash)
	m.Reset()
	m.Write([]byte(id))
	var sum [sha256.Size]byte
	tag := m.Sum(sum[:0])
	c.msgIDs.Put(m)
	var hexTag [16]byte
	hex.Encode(hexTag[:], tag[:8])
	return id + "/" + string(hexTag[:])
}

// KeyID returns the id of the key the codec seals with.
func (c *Codec) KeyID() string { return c.sealID }

// HasKey reports whether the codec's ring holds the key named id.
func (c *Codec) HasKey(id string) bool { return c.pool(id) != nil }

func (c *Codec) pool(id string) *sync.Pool {
	for i := range c.signers {
		if c.signers[i].id == id {
			return c.signers[i].pool
		}
	}
	return nil
}

// sealFrame validates and seals msg as one frame with the current key.
func (c *Codec) sealFrame(sessionID string, role protocol.SessionRole, seq uint64, msg protocol.WorkerMessage) (protocol.Frame, error) {
	if err := checkHeaderSession(sessionID); err != nil {
		return protocol.Frame{}, err
	}
	p := c.signers[0].pool
	s := p.Get().(*protocol.Signer)
	f, err := s.Seal(sessionID, role, seq, msg)
	p.Put(s)
	return f, err
}

// seal seals msg as a NATS message (see HeaderSession) naming the key in
// HeaderKey; the caller sets the subject.
func (c *Codec) seal(sessionID string, role protocol.SessionRole, seq uint64, msg protocol.WorkerMessage) (*nats.Msg, error) {
	f, err := c.sealFrame(sessionID, role, seq, msg)
	if err != nil {
		return nil, err
	}
	m := FrameMsg(f)
	m.Header[HeaderKey] = []string{c.sealID}
	return m, nil
}

// open reads a frame from role out of a NATS message's headers and body
// and authenticates it with the key HeaderKey names.
func (c *Codec) open(h nats.Header, body []byte, role protocol.SessionRole) (protocol.Frame, protocol.WorkerMessage, error) {
	f, err := parseFrameMsg(h, body, c.maxFrame)
	if err != nil {
		return protocol.Frame{}, protocol.WorkerMessage{}, forged(err)
	}
	id, err := frameKeyID(h)
	if err != nil {
		return protocol.Frame{}, protocol.WorkerMessage{}, forged(err)
	}
	return c.verify(f, role, id)
}

// verify authenticates f as a frame from role, sealed with the key named
// id. The role is checked before the tag, so a reflected frame costs no
// HMAC. A frame that names no key (laid out by FrameMsg alone, or stored
// before key rings) is tried under each key of the ring, at most
// protocol.MaxRingKeys HMACs.
func (c *Codec) verify(f protocol.Frame, role protocol.SessionRole, id string) (protocol.Frame, protocol.WorkerMessage, error) {
	if f.Role != role {
		return protocol.Frame{}, protocol.WorkerMessage{}, forged(fmt.Errorf("%w: frame from %s, want %s", protocol.ErrWrongRole, f.Role, role))
	}
	if id == "" {
		var first error
		for i := range c.signers {
			msg, err := verifyWith(c.signers[i].pool, f)
			if err == nil {
				return f, msg, nil
			}
			if first == nil {
				first = err
			}
		}
		return protocol.Frame{}, protocol.WorkerMessage{}, forged(first)
	}
	p := c.pool(id)
	if p == nil {
		return protocol.Frame{}, protocol.WorkerMessage{}, forged(fmt.Errorf("%w: %w: sealed with key %q, not in this ring", protocol.ErrBadTag, ErrUnknownKey, clip.String(id, clip.Echo)))
	}
	msg, err := verifyWith(p, f)
	if err != nil {
		return protocol.Frame{}, protocol.WorkerMessage{}, forged(err)
	}
	return f, msg, nil
}

func verifyWith(p *sync.Pool, f protocol.Frame) (protocol.WorkerMessage, error) {
	s := p.Get().(*protocol.Signer)
	msg, err := s.Verify(f)
	p.Put(s)
	return msg, err
}

// forged marks err as a rejected frame while keeping its protocol sentinel.
func forged(err error) error { return fmt.Errorf("%w: %w", ErrForged, err) }

func sessionMismatch(session, requestID string) error {
	return forged(fmt.Errorf("%w: session %q carries request %q", protocol.ErrInvalidSession, clip.String(session, clip.Echo), clip.String(requestID, clip.Echo)))
}

func seqMismatch(seq, want uint64) error {
	return forged(fmt.Errorf("%w: seq %d, want %d", protocol.ErrSequence, seq, want))
}

func wrongKind(got protocol.MessageKind, want string) error {
	return forged(fmt.Errorf("%w: kind %q, want %s", protocol.ErrInvalidMessage, clip.String(string(got), clip.Echo), want))
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

// SealCancelRecord seals cancel as SealCancel does, laid out as the key's
// id, a space and the frame as one JSON line (protocol.Frame.ToJSONLine):
// the host's cancel record in BucketCancel, where a value carries no
// headers.
func (c *Codec) SealCancelRecord(cancel protocol.Cancel) ([]byte, error) {
	if err := checkAttempt(cancel.Attempt); err != nil {
		return nil, err
	}
	f, err := c.sealFrame(cancel.RequestID, protocol.RoleHost, CancelSeq(cancel.Attempt), protocol.CancelMessage(cancel))
	if err != nil {
		return nil, err
	}
	line, err := f.ToJSONLine()
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(c.sealID)+1+len(line))
	out = append(out, c.sealID...)
	out = append(out, ' ')
	return append(out, line...), nil
}

// OpenCancelRecord authenticates a cancel record read from BucketCancel as
// OpenCancel does a cancel frame. A record over the frame limit is refused
// before it is parsed; one that is a bare JSON line (stored before key
// rings) is tried under each key.
func (c *Codec) OpenCancelRecord(data []byte) (protocol.Cancel, error) {
	if limit := c.maxFrame + protocol.MaxKeyIDBytes + 2; len(data) > limit {
		return protocol.Cancel{}, forged(fmt.Errorf("%w: cancel record of %d bytes, limit %d", protocol.ErrFrameTooLarge, len(data), limit))
	}
	var id string
	if len(data) > 0 && data[0] != '{' {
		raw, line, ok := bytes.Cut(data, []byte{' '})
		if !ok || protocol.ValidateKeyID(string(raw)) != nil {
			return protocol.Cancel{}, forged(fmt.Errorf("%w: cancel record without a key id", protocol.ErrMalformedFrame))
		}
		id, data = string(raw), line
	}
	f, err := protocol.ParseJSONLineLimit(data, c.maxFrame)
	if err != nil {
		return protocol.Cancel{}, forged(err)
	}
	f, msg, err := c.verify(f, protocol.RoleHost, id)
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
		return nil, fmt.Errorf("%w: message for request %q sealed as %q", protocol.ErrInvalidSession, clip.String(reqID, clip.Echo), clip.String(requestID, clip.Echo))
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
