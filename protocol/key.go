package protocol

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
)

// AuthTagBytes is the length of a session key and of an HMAC-SHA256 tag.
const AuthTagBytes = 32

// SessionKey is the shared secret that a host and its workers seal frames
// with. It is provisioned out of band; this package does no key exchange.
//
// The bytes are unexported so that a key cannot be logged by accident: String
// and GoString are redacted, and encoding/json sees no fields. The zero value
// is not a key; everything that needs one refuses it with ErrInvalidKey, so a
// forgotten configuration field fails closed instead of sealing with zeros.
type SessionKey struct {
	b     [AuthTagBytes]byte
	valid bool
}

// NewSessionKey copies b into a key. It refuses any length but AuthTagBytes:
// a shorter key would silently weaken the tag, a longer one suggests the
// caller passed the wrong buffer.
func NewSessionKey(b []byte) (SessionKey, error) {
	if len(b) != AuthTagBytes {
		return SessionKey{}, fmt.Errorf("%w: %d bytes, want %d", ErrInvalidKey, len(b), AuthTagBytes)
	}
	var k SessionKey
	copy(k.b[:], b)
	k.valid = true
	return k, nil
}

// SessionKeyFromArray makes a key from an array, which has the right length
// by construction.
func SessionKeyFromArray(b [AuthTagBytes]byte) SessionKey {
	return SessionKey{b: b, valid: true}
}

// GenerateSessionKey reads a fresh key from r, or from crypto/rand when r is
// nil. A short read is an error: there is no fallback source.
func GenerateSessionKey(r io.Reader) (SessionKey, error) {
	if r == nil {
		r = rand.Reader
	}
	var k SessionKey
	if _, err := io.ReadFull(r, k.b[:]); err != nil {
		return SessionKey{}, fmt.Errorf("%w: reading entropy: %v", ErrInvalidKey, err)
	}
	k.valid = true
	return k, nil
}

// ParseSessionKey decodes a key as it appears in a key file or environment
// variable: 64 hex digits, or standard or URL-safe base64 (padded or not) of
// 32 bytes. Surrounding whitespace, such as a file's final newline, is
// ignored. The error never echoes the input, which may be a real key.
func ParseSessionKey(s string) (SessionKey, error) {
	s = strings.TrimSpace(s)
	if len(s) == 2*AuthTagBytes {
		var b [AuthTagBytes]byte
		if _, err := hex.Decode(b[:], []byte(s)); err == nil {
			return SessionKeyFromArray(b), nil
		}
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil && len(b) == AuthTagBytes {
			return NewSessionKey(b)
		}
	}
	return SessionKey{}, fmt.Errorf("%w: want 64 hex digits or base64 of %d bytes, got %d characters", ErrInvalidKey, AuthTagBytes, len(s))
}

// IsZero reports whether k is the zero value rather than a constructed key.
func (k SessionKey) IsZero() bool { return !k.valid }

// Bytes returns a copy of the key material, for writing a generated key to
// its store. Nothing else in the package needs it; treat the result as a
// secret.
func (k SessionKey) Bytes() [AuthTagBytes]byte { return k.b }

// Equal reports whether two keys hold the same bytes, in constant time.
func (k SessionKey) Equal(o SessionKey) bool {
	return k.valid == o.valid && subtle.ConstantTimeCompare(k.b[:], o.b[:]) == 1
}

// String never reveals the key, so %v and %s are safe in logs.
func (k SessionKey) String() string { return "SessionKey(redacted)" }

// GoString keeps %#v redacted too.
func (k SessionKey) GoString() string { return "protocol.SessionKey(redacted)" }

func (k SessionKey) check() error {
	if !k.valid {
		return fmt.Errorf("%w: zero SessionKey", ErrInvalidKey)
	}
	return nil
}
