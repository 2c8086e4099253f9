package protocol

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"math"

	"github.com/splashfabric/splashfabric/internal/clip"
)

// Signer seals and verifies frames under one key without keeping any
// session state: it checks the tag, the shape and the message, never the
// sequence, so a caller that keeps its own replay window (the NATS fabric,
// which sees many requests interleaved) can use it directly. For one
// strictly ordered session, use SessionAuthenticator instead.
//
// A Signer reuses one HMAC state and one scratch buffer across frames, so
// it is not safe for concurrent use; give each goroutine its own, or keep
// them in a sync.Pool.
type Signer struct {
	mac    hash.Hash // nil when the key was the zero SessionKey
	header []byte    // reused for the canonical header
	sum    [sha256.Size]byte
	// msg holds the message Seal is encoding: encoding a pointer
	// into the Signer costs no allocation, where boxing the argument
	// would. Seal clears it so the Signer keeps nothing of the caller's.
	msg WorkerMessage
}

// NewSigner returns a Signer for key. A zero key yields a Signer whose every
// call fails with ErrInvalidKey, so a missing key fails closed where it is
// used.
func NewSigner(key SessionKey) *Signer {
	s := &Signer{header: make([]byte, 0, 64)}
	if key.check() == nil {
		s.mac = hmac.New(sha256.New, key.b[:])
	}
	return s
}

// Seal validates msg and seals it as frame seq of sessionID sent by role.
// Nothing is sealed when msg is invalid (ErrInvalidMessage), the session id
// is empty or not UTF-8 (ErrInvalidSession), the role is unknown
// (ErrWrongRole) or seq is zero (ErrSequence).
func (s *Signer) Seal(sessionID string, role SessionRole, seq uint64, msg WorkerMessage) (Frame, error) {
	if s.mac == nil {
		return Frame{}, fmt.Errorf("%w: zero SessionKey", ErrInvalidKey)
	}
	if err := validateSessionID(sessionID); err != nil {
		return Frame{}, err
	}
	if err := role.Validate(); err != nil {
		return Frame{}, err
	}
	if seq < 1 {
		return Frame{}, fmt.Errorf("%w: seq %d, sequences count from 1", ErrSequence, seq)
	}
	if err := msg.Validate(); err != nil {
		return Frame{}, err
	}
	s.msg = msg
	raw, err := encodeMessage(&s.msg)
	s.msg = WorkerMessage{}
	if err != nil {
		return Frame{}, fmt.Errorf("%w: %v", ErrInvalidMessage, err)
	}
	if uint64(len(raw)) > math.MaxUint32 {
		return Frame{}, fmt.Errorf("%w: msg of %d bytes", ErrFrameTooLarge, len(raw))
	}
	sum := s.tag(sessionID, role, seq, raw)
	var tag [2 * AuthTagBytes]byte
	hex.Encode(tag[:], sum)
	return Frame{SessionID: sessionID, Role: role, Sequence: seq, Message: raw, Tag: string(tag[:])}, nil
}

// Verify checks f's shape and tag (in constant time), then decodes and
// validates its message. It does not look at the sequence beyond requiring
// it to be at least 1: ordering and replay are the caller's policy.
func (s *Signer) Verify(f Frame) (WorkerMessage, error) {
	if err := s.checkTag(f); err != nil {
		return WorkerMessage{}, err
	}
	return decodeMessage(f.Message)
}

// checkTag authenticates f without decoding its message.
func (s *Signer) checkTag(f Frame) error {
	if s.mac == nil {
		return fmt.Errorf("%w: zero SessionKey", ErrInvalidKey)
	}
	if err := f.checkShape(); err != nil {
		return err
	}
	got := decodeTag(f.Tag)
	if !hmac.Equal(got[:], s.tag(f.SessionID, f.Role, f.Sequence, f.Message)) {
		return fmt.Errorf("%w: session %q seq %d from %s", ErrBadTag, clip.String(f.SessionID, clip.Echo), f.Sequence, f.Role)
	}
	return nil
}

// decodeTag decodes a tag that checkShape has found to be 2*AuthTagBytes
// lowercase hex digits. Copying it into an array first keeps the []byte
// that hex.Decode wants on the stack; a conversion of the string would
// allocate.
func decodeTag(tag string) [AuthTagBytes]byte {
	var src [2 * AuthTagBytes]byte
	copy(src[:], tag)
	var b [AuthTagBytes]byte
	_, _ = hex.Decode(b[:], src[:]) // checkShape has checked every digit
	return b
}

// tag computes the MAC into s.sum; the result is valid until the next call.
// Reset restores the keyed state, so no frame pays for hmac.New.
func (s *Signer) tag(sessionID string, role SessionRole, seq uint64, msg []byte) []byte {
	s.header = appendCanonicalHeader(s.header[:0], sessionID, role, seq, len(msg))
	s.mac.Reset()
	s.mac.Write(s.header)
	s.mac.Write(msg)
	return s.mac.Sum(s.sum[:0])
}

// SealFrame seals one frame without keeping a Signer. It pays for a fresh
// HMAC state per call; a hot path should hold a Signer.
func SealFrame(key SessionKey, sessionID string, role SessionRole, seq uint64, msg WorkerMessage) (Frame, error) {
	return NewSigner(key).Seal(sessionID, role, seq, msg)
}

// VerifyFrame verifies one frame without keeping a Signer; see
// Signer.Verify.
func VerifyFrame(key SessionKey, f Frame) (WorkerMessage, error) {
	return NewSigner(key).Verify(f)
}
