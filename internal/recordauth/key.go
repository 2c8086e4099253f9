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

// prefix starts every sealed record. No JSON value starts with 's', so a
// record written before sealing is told apart from a sealed one.
const prefix = "sfr1."

var tagEncoding = base64.RawURLEncoding

// tagChars is the length of an HMAC-SHA256 tag in unpadded base64.
const tagChars = 43

// Overhead is how many bytes Seal adds to a body.
const Overhead = len(prefix) + tagChars + 1

// Key authenticates the records of one store. The zero value is not a key:
// Seal and Open refuse it by panicking and with ErrInvalidKey, so a
// forgotten configuration fails closed.
type Key struct {
	b     [sha256.Size]byte
	valid bool
}

// Derive returns the key of store under the frame key.
func Derive(frame protocol.SessionKey, store string) (Key, error) {
	if frame.IsZero() || store == "" {
		return Key{}, fmt.Errorf("%w: frame key zero or store label empty", ErrInvalidKey)
	}
	secret := frame.Bytes()
	b, err := hkdf.Key(sha256.New, secret[:], nil, infoPrefix+store, sha256.Size)
	if err != nil {
		return Key{}, fmt.Errorf("%w: %v", ErrInvalidKey, err)
	}
	var k Key
	copy(k.b[:], b)
	k.valid = true
	return k, nil
}

// IsZero reports whether k is the zero value rather than a derived key.
func (k Key) IsZero() bool { return !k.valid }

// String never reveals the key.
func (k Key) String() string { return "recordauth.Key(redacted)" }

// GoString keeps %#v redacted too.
func (k Key) GoString() string { return k.String() }

// Seal returns body stored under name, with its tag in front. It panics on
// the zero Key: sealing with no key is a wiring error, not bad input.
func (k Key) Seal(name string, body []byte) []byte {
	if !k.valid {
		panic("recordauth: Seal with the zero Key")
	}
	out := make([]byte, 0, Overhead+len(body))
	out = append(out, prefix...)
	out = tagEncoding.AppendEncode(out, k.tag(name, body))
	out = append(out, '.')
	return append(out, body...)
}

// Open returns the body of data, a record read under name, once its tag
// verifies. The body aliases data.
func (k Key) Open(name string, data []byte) ([]byte, error) {
	if !k.valid {
		return nil, fmt.Errorf("%w: zero Key", ErrInvalidKey)
	}
	rest, ok := bytes.CutPrefix(data, []byte(prefix))
	if !ok {
		return nil, ErrUnsigned
	}
	if len(rest) < tagChars+1 || rest[tagChars] != '.' {
		return nil, fmt.Errorf("%w: malformed tag", ErrBadTag)
	}
	var got [sha256.Size]byte
	if n, err := tagEncoding.Decode(got[:], rest[:tagChars]); err != nil || n != len(got) {
		return nil, fmt.Errorf("%w: malformed tag", ErrBadTag)
	}
	body := rest[tagChars+1:]
	if !hmac.Equal(got[:], k.tag(name, body)) {
		return nil, ErrBadTag
	}
	return body, nil
}

// tag is HMAC-SHA256 over the length of name, name and body: the length
// keeps a split between name and body from being moved.
func (k Key) tag(name string, body []byte) []byte {
	m := hmac.New(sha256.New, k.b[:])
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(name)))
	m.Write(n[:])
	m.Write([]byte(name))
	m.Write(body)
	return m.Sum(nil)
}
