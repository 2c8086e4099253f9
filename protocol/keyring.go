package protocol

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/splashfabric/splashfabric/internal/clip"
)

// MaxRingKeys bounds a key ring. A ring holds the current key, at most one
// staged next key and the retired keys still needed to verify what was
// sealed before a rotation; a handful is normal, and the bound keeps a file
// mistaken for a ring from being read whole.
const MaxRingKeys = 16

// MaxKeyIDBytes bounds a key id: it travels with every seal.
const MaxKeyIDBytes = 32

// KeyState says what a key of a ring is used for.
type KeyState uint8

// The states of a ring's keys. Exactly one key is current.
const (
	// KeyCurrent seals and verifies.
	KeyCurrent KeyState = iota + 1
	// KeyNext only verifies: it is staged, so every party of a fabric can
	// hold it before anyone seals with it (see KeyRing.Promote).
	KeyNext
	// KeyRetired only verifies what was sealed before a rotation; it can
	// be dropped once nothing sealed with it is live.
	KeyRetired
)

// String returns the state's name as a ring file writes it.
func (s KeyState) String() string {
	switch s {
	case KeyCurrent:
		return "current"
	case KeyNext:
		return "next"
	case KeyRetired:
		return "retired"
	}
	return "KeyState(" + strconv.Itoa(int(s)) + ")"
}

func parseKeyState(s string) (KeyState, bool) {
	switch s {
	case "current":
		return KeyCurrent, true
	case "next":
		return KeyNext, true
	case "retired":
		return KeyRetired, true
	}
	return 0, false
}

// RingKey is one key of a ring with its id and state. The id is not secret:
// it travels beside every seal made with the key, so a verifier picks the
// key without trying the others.
type RingKey struct {
	ID    string
	State KeyState
	Key   SessionKey
}

// Keys is anything that can stand for a key ring: a KeyRing, or a single
// SessionKey, which is a ring of one whose id is derived from the key
// (KeyIDOf). Everything that seals with a key or verifies a seal takes
// Keys, so a caller with one key keeps passing it.
type Keys interface {
	Ring() KeyRing
}

// KeyRing is a current key together with keys that only verify: one staged
// for the next rotation and the retired ones. Seal with the current key;
// verify with the key whose id came with the seal. A KeyRing is an
// immutable value: Stage, Promote, Rotate and Drop return a new ring.
//
// The zero KeyRing holds no key; everything that needs one refuses it with
// ErrInvalidKey. String and GoString show ids and states only.
type KeyRing struct {
	keys []RingKey // the current key first, then next, then retired, each group in file order
}

var (
	_ Keys = KeyRing{}
	_ Keys = SessionKey{}
)

// Ring returns r itself.
func (r KeyRing) Ring() KeyRing { return r }

// Ring returns the ring of one that k stands for: k current, under the id
// KeyIDOf derives from it. The zero key gives the zero ring.
func (k SessionKey) Ring() KeyRing {
	if k.IsZero() {
		return KeyRing{}
	}
	return KeyRing{keys: []RingKey{{ID: KeyIDOf(k), State: KeyCurrent, Key: k}}}
}

// keyIDDomain separates key ids from any other hash of a key.
const keyIDDomain = "splash-key-id-v1\x00"

// KeyIDOf derives the id a key gets when nothing names it: "k" and 12 hex
// digits of SHA-256 over a domain label and the key. The same key always
// gets the same id, so a bare key file and a ring holding that key agree;
// 48 bits of a hash say nothing useful about the key.
func KeyIDOf(k SessionKey) string {
	h := sha256.New()
	h.Write([]byte(keyIDDomain))
	h.Write(k.b[:])
	var sum [sha256.Size]byte
	return "k" + hex.EncodeToString(h.Sum(sum[:0])[:6])
}

// ValidateKeyID accepts 1..MaxKeyIDBytes bytes of [A-Za-z0-9_-]: one token
// that a NATS header, a record prefix and a ring file carry verbatim.
func ValidateKeyID(id string) error {
	if id == "" || len(id) > MaxKeyIDBytes {
		return fmt.Errorf("%w: key id of %d bytes, want 1..%d", ErrInvalidKey, len(id), MaxKeyIDBytes)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return fmt.Errorf("%w: key id %q has byte %q at %d", ErrInvalidKey, clip.String(id, clip.Echo), c, i)
		}
	}
	return nil
}

// NewKeyRing checks keys and returns them as a ring: exactly one current
// key, at most one next key, ids valid and distinct, no key twice, no zero
// key, at most MaxRingKeys. Every refusal wraps ErrInvalidKey.
func NewKeyRing(keys ...RingKey) (KeyRing, error) {
	if len(keys) == 0 {
		return KeyRing{}, fmt.Errorf("%w: a ring needs a current key", ErrInvalidKey)
	}
	if len(keys) > MaxRingKeys {
		return KeyRing{}, fmt.Errorf("%w: %d keys, at most %d", ErrInvalidKey, len(keys), MaxRingKeys)
	}
	var current, next int
	for i, k := range keys {
		if err := ValidateKeyID(k.ID); err != nil {
			return KeyRing{}, err
		}
		if err := k.Key.check(); err != nil {
			return KeyRing{}, fmt.Errorf("%w (key %s)", err, k.ID)
		}
		switch k.State {
		case KeyCurrent:
			current++
		case KeyNext:
			next++
		case KeyRetired:
		default:
			return KeyRing{}, fmt.Errorf("%w: key %s has state %v", ErrInvalidKey, k.ID, k.State)
		}
		for _, o := range keys[:i] {
			if o.ID == k.ID {
				return KeyRing{}, fmt.Errorf("%w: key id %s twice", ErrInvalidKey, k.ID)
			}
			if o.Key.Equal(k.Key) {
				return KeyRing{}, fmt.Errorf("%w: keys %s and %s are the same key", ErrInvalidKey, o.ID, k.ID)
			}
		}
	}
	if current != 1 {
		return KeyRing{}, fmt.Errorf("%w: %d current keys, want exactly 1", ErrInvalidKey, current)
	}
	if next > 1 {
		return KeyRing{}, fmt.Errorf("%w: %d next keys, at most 1", ErrInvalidKey, next)
	}
	out := make([]RingKey, 0, len(keys))
	for _, st := range []KeyState{KeyCurrent, KeyNext, KeyRetired} {
		for _, k := range keys {
			if k.State == st {
				out = append(out, k)
			}
		}
	}
	return KeyRing{keys: out}, nil
}

// IsZero reports whether r holds no key.
func (r KeyRing) IsZero() bool { return len(r.keys) == 0 }

// Len returns how many keys r holds.
func (r KeyRing) Len() int { return len(r.keys) }

// Current returns the id and the key that seal. The zero ring returns ""
// and the zero key, which every sealer refuses.
func (r KeyRing) Current() (string, SessionKey) {
	if len(r.keys) == 0 {
		return "", SessionKey{}
	}
	return r.keys[0].ID, r.keys[0].Key
}

// Key returns the key named id, whatever its state.
func (r KeyRing) Key(id string) (SessionKey, bool) {
	for _, k := range r.keys {
		if k.ID == id {
			return k.Key, true
		}
	}
	return SessionKey{}, false
}

// Keys returns a copy of the ring's keys, the current one first.
func (r KeyRing) Keys() []RingKey { return append([]RingKey(nil), r.keys...) }

// IDs returns the ids of the ring's keys, the current one first.
func (r KeyRing) IDs() []string {
	ids := make([]string, len(r.keys))
	for i, k := range r.keys {
		ids[i] = k.ID
	}
	return ids
}

// check refuses the zero ring.
func (r KeyRing) check() error {
	if len(r.keys) == 0 {
		return fmt.Errorf("%w: empty key ring", ErrInvalidKey)
	}
	return nil
}

// with returns r with its states changed by f and key k added (if not
// zero), checked as NewKeyRing checks.
func (r KeyRing) with(add *RingKey, f func(RingKey) (RingKey, bool)) (KeyRing, error) {
	if err := r.check(); err != nil {
		return KeyRing{}, err
	}
	var keys []RingKey
	if add != nil {
		keys = append(keys, *add)
	}
	for _, k := range r.keys {
		if k2, keep := f(k); keep {
			keys = append(keys, k2)
		}
	}
	return NewKeyRing(keys...)
}

// Stage adds k as the next key: every holder of the ring verifies with it,
// nobody seals with it yet. Give the staged ring to every party (hosts and
// workers) before Promote, so no party meets a seal it cannot verify. A
// ring already holding a next key refuses another.
func (r KeyRing) Stage(k SessionKey) (KeyRing, error) {
	return r.with(&RingKey{ID: KeyIDOf(k), State: KeyNext, Key: k}, func(o RingKey) (RingKey, bool) { return o, true })
}

// Promote makes the next key current and retires the current one. A ring
// without a next key is refused.
func (r KeyRing) Promote() (KeyRing, error) {
	if err := r.check(); err != nil {
		return KeyRing{}, err
	}
	if len(r.keys) < 2 || r.keys[1].State != KeyNext {
		return KeyRing{}, fmt.Errorf("%w: no next key to promote; stage one first", ErrInvalidKey)
	}
	return r.with(nil, func(o RingKey) (RingKey, bool) {
		switch o.State {
		case KeyCurrent:
			o.State = KeyRetired
		case KeyNext:
			o.State = KeyCurrent
		}
		return o, true
	})
}

// Rotate makes k current at once and retires the current key: the
// one-step rotation, safe when every party that verifies what the ring
// seals takes the new ring before any of them seals again (one host, or
// everything restarted together). Otherwise Stage, then Promote. A staged
// next key is kept.
func (r KeyRing) Rotate(k SessionKey) (KeyRing, error) {
	return r.with(&RingKey{ID: KeyIDOf(k), State: KeyCurrent, Key: k}, func(o RingKey) (RingKey, bool) {
		if o.State == KeyCurrent {
			o.State = KeyRetired
		}
		return o, true
	})
}

// Drop removes the key named id, which must not be current. Drop a retired
// key only once nothing sealed with it is live (`splash keys status`).
func (r KeyRing) Drop(id string) (KeyRing, error) {
	if err := r.check(); err != nil {
		return KeyRing{}, err
	}
	k, ok := r.find(id)
	switch {
	case !ok:
		return KeyRing{}, fmt.Errorf("%w: no key %q in the ring", ErrInvalidKey, clip.String(id, clip.Echo))
	case k.State == KeyCurrent:
		return KeyRing{}, fmt.Errorf("%w: key %s is current; rotate before dropping it", ErrInvalidKey, id)
	}
	return r.with(nil, func(o RingKey) (RingKey, bool) { return o, o.ID != id })
}

func (r KeyRing) find(id string) (RingKey, bool) {
	for _, k := range r.keys {
		if k.ID == id {
			return k, true
		}
	}
	return RingKey{}, false
}

// String shows the ring's ids and states, never a key.
func (r KeyRing) String() string {
	var b strings.Builder
	b.WriteString("KeyRing(")
	for i, k := range r.keys {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(k.State.String())
		b.WriteByte(' ')
		b.WriteString(k.ID)
	}
	b.WriteByte(')')
	return b.String()
}

// GoString keeps %#v free of key material too.
func (r KeyRing) GoString() string { return "protocol." + r.String() }
