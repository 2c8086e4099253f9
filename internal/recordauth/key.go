package recordauth

import (
	"bytes"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"

	"github.com/splashfabric/splashfabric/protocol"

	"github.com/splashfabric/splashfabric/internal/clip"
)

// Store labels: one derived key per store that holds sealed records.
const (
	// StoreSessions is the host's session archive (splash_sessions).
	StoreSessions = "session_archive"
	// StoreJournal is the workers' idempotency journal.
	StoreJournal = "journal"
	// StoreLedger is the hosts' session ledgers (SPLASH_LEDGER).
	StoreLedger = "ledger"
)

// infoPrefix makes the derivation specific to this use of the frame key;
// the version lets a later format derive fresh keys.
const infoPrefix = "splash-fabric record key v1: "

// The prefixes of a sealed record. No JSON value starts with 's', so a
// record written before sealing is told apart from a sealed one. A v2
// record names the key that sealed it; a v1 record, written before key
// rings, does not.
const (
	prefixV2 = "sfr2."
	prefixV1 = "sfr1."
)

var tagEncoding = base64.RawURLEncoding

// tagChars is the length of an HMAC-SHA256 tag in unpadded base64.
const tagChars = 43

// Overhead bounds how many bytes Seal adds to a body: the prefix, the
// longest key id, the tag and their separators.
const Overhead = len(prefixV2) + protocol.MaxKeyIDBytes + 1 + tagChars + 1

// Key authenticates the records of one store under a key ring: it seals
// with the store's key derived from the ring's current key and opens a
// record with the key derived from the one that sealed it, named in the
// record. The zero value is not a key: Seal and Open refuse it by
// panicking and with ErrInvalidKey, so a forgotten configuration fails
// closed.
type Key struct {
	keys []derived // the ring's current key first
}

// derived is the store key of one key of the ring.
type derived struct {
	id string
	b  [sha256.Size]byte
}

// Derive returns the key of store under keys: a ring, or a single frame
// key (a ring of one).
func Derive(keys protocol.Keys, store string) (Key, error) {
	if keys == nil || store == "" {
		return Key{}, fmt.Errorf("%w: no frame key or store label empty", ErrInvalidKey)
	}
	ring := keys.Ring()
	if ring.IsZero() {
		return Key{}, fmt.Errorf("%w: frame key zero", ErrInvalidKey)
	}
	k := Key{keys: make([]derived, 0, ring.Len())}
	for _, rk := range ring.Keys() {
		secret := rk.Key.Bytes()
		b, err := hkdf.Key(sha256.New, secret[:], nil, infoPrefix+store, sha256.Size)
		if err != nil {
			return Key{}, fmt.Errorf("%w: %v", ErrInvalidKey, err)
		}
		d := derived{id: rk.ID}
		copy(d.b[:], b)
		k.keys = append(k.keys, d)
	}
	return k, nil
}

// IsZero reports whether k is the zero value rather than a derived key.
func (k Key) IsZero() bool { return len(k.keys) == 0 }

// String never reveals the key.
func (k Key) String() string { return "recordauth.Key(redacted)" }

// GoString keeps %#v redacted too.
func (k Key) GoString() string { return k.String() }

// Seal returns body stored under name, sealed with the current key, with
// the key's id and the tag in front. It panics on the zero Key: sealing
// with no key is a wiring error, not bad input.
func (k Key) Seal(name string, body []byte) []byte {
	if len(k.keys) == 0 {
		panic("recordauth: Seal with the zero Key")
	}
	d := &k.keys[0]
	out := make([]byte, 0, len(prefixV2)+len(d.id)+1+tagChars+1+len(body))
	out = append(out, prefixV2...)
	out = append(out, d.id...)
	out = append(out, '.')
	out = tagEncoding.AppendEncode(out, d.tag(name, body))
	out = append(out, '.')
	return append(out, body...)
}

// Open returns the body of data, a record read under name, once its tag
// verifies under the key the record names. A record sealed before key
// rings names none and is tried under each key of the ring. The body
// aliases data.
func (k Key) Open(name string, data []byte) ([]byte, error) {
	if len(k.keys) == 0 {
		return nil, fmt.Errorf("%w: zero Key", ErrInvalidKey)
	}
	if rest, ok := bytes.CutPrefix(data, []byte(prefixV2)); ok {
		id, rest, ok := bytes.Cut(rest, []byte{'.'})
		if !ok {
			return nil, fmt.Errorf("%w: malformed key id", ErrBadTag)
		}
		d := k.find(string(id))
		if d == nil {
			return nil, fmt.Errorf("%w: %w: sealed with key %q, not in the ring", ErrBadTag, ErrUnknownKey, clip.Bytes(id, 32))
		}
		return d.open(name, rest)
	}
	if rest, ok := bytes.CutPrefix(data, []byte(prefixV1)); ok {
		for i := range k.keys {
			if body, err := k.keys[i].open(name, rest); err == nil {
				return body, nil
			}
		}
		return nil, ErrBadTag
	}
	return nil, ErrUnsigned
}

// SealedBy reports the id of the key that sealed data: ok is false for a
// record that is not sealed, and id is empty for one sealed before key
// rings, which names no key. It checks nothing: `splash keys status`
// counts records by it.
func SealedBy(data []byte) (id string, ok bool) {
	if rest, found := bytes.CutPrefix(data, []byte(prefixV2)); found {
		id, _, found := bytes.Cut(rest, []byte{'.'})
		return string(id), found
	}
	return "", bytes.HasPrefix(data, []byte(prefixV1))
}

func (k Key) find(id string) *derived {
	for i := range k.keys {
		if k.keys[i].id == id {
			return &k.keys[i]
		}
	}
	return nil
}

// open checks rest, a record after its prefix and key id: the tag, a dot
// and the body.
func (d *derived) open(name string, rest []byte) ([]byte, error) {
	if len(rest) < tagChars+1 || rest[tagChars] != '.' {
		return nil, fmt.Errorf("%w: malformed tag", ErrBadTag)
	}
	var got [sha256.Size]byte
	if n, err := tagEncoding.Decode(got[:], rest[:tagChars]); err != nil || n != len(got) {
		return nil, fmt.Errorf("%w: malformed tag", ErrBadTag)
	}
	body := rest[tagChars+1:]
	if !hmac.Equal(got[:], d.tag(name, body)) {
		return nil, ErrBadTag
	}
	return body, nil
}

// tag is HMAC-SHA256 over the length of name, name and body: the length
// keeps a split between name and body from being moved.
func (d *derived) tag(name string, body []byte) []byte {
	m := hmac.New(sha256.New, d.b[:])
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(name)))
	m.Write(n[:])
	m.Write([]byte(name))
	m.Write(body)
	return m.Sum(nil)
}
