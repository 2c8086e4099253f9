package host

import (
	"encoding/hex"
	"fmt"
	"io"
	"strconv"
)

// CapabilitySessionNonce is 16 bytes that make this runtime session's
// idempotency keys distinct from every other session's. It is not a
// credential and not a durable identity.
type CapabilitySessionNonce struct{ b [16]byte }

// NewCapabilitySessionNonce wraps a trusted unique value, for hosts that
// have a better source than operating-system entropy.
func NewCapabilitySessionNonce(b [16]byte) CapabilitySessionNonce {
	return CapabilitySessionNonce{b: b}
}

// Bytes returns the nonce.
func (n CapabilitySessionNonce) Bytes() [16]byte { return n.b }

// String returns the nonce as 32 lower-case hex digits.
func (n CapabilitySessionNonce) String() string { return hex.EncodeToString(n.b[:]) }

// drawNonce reads a nonce from r. A short read is as fatal as an error:
// a partly random nonce could repeat across sessions.
func drawNonce(r io.Reader) (CapabilitySessionNonce, error) {
	var n CapabilitySessionNonce
	if _, err := io.ReadFull(r, n.b[:]); err != nil {
		return CapabilitySessionNonce{}, fmt.Errorf("%w: %v", ErrEntropyUnavailable, err)
	}
	return n, nil
}

// IdempotencyKeyPrefix is the version tag of the key format
//
//	sk1-<32 hex digits of the session nonce>-<call index in decimal>
//
// The call index is unique within a session and the nonce across
// sessions, so the key is distinct per operation and stable across
// its attempts.
const IdempotencyKeyPrefix = "sk1-"

func keyPrefix(n CapabilitySessionNonce) []byte {
	b := make([]byte, 0, len(IdempotencyKeyPrefix)+32+1+20)
	b = append(b, IdempotencyKeyPrefix...)
	b = hex.AppendEncode(b, n.b[:])
	return append(b, '-')
}

// idempotencyKey builds the key of call index i with one allocation.
func (r *Runtime) idempotencyKey(i uint64) string {
	// keyBuf holds the session prefix and room for the index, so only the
	// final string allocates.
	b := strconv.AppendUint(r.keyBuf[:r.keyPrefixLen], i, 10)
	return string(b)
}
