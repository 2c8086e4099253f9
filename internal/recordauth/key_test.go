package recordauth_test

import (
	"bytes"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"

	"github.com/splashfabric/splashfabric/internal/recordauth"
	"github.com/splashfabric/splashfabric/protocol"
)

func frameKey(t *testing.T, fill byte) protocol.SessionKey {
	t.Helper()
	k, err := protocol.NewSessionKey(bytes.Repeat([]byte{fill}, protocol.AuthTagBytes))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func derive(t *testing.T, frame protocol.Keys, store string) recordauth.Key {
	t.Helper()
	k, err := recordauth.Derive(frame, store)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestSealOpenRoundTrip(t *testing.T) {
	k := derive(t, frameKey(t, 1), recordauth.StoreSessions)
	body := []byte(`{"id":"s-1","state":"completed","value":"hi"}`)
	sealed := k.Seal("s.s-1", body)
	if len(sealed) > len(body)+recordauth.Overhead {
		t.Errorf("sealed %d bytes, more than body + %d", len(sealed), recordauth.Overhead)
	}
	got, err := k.Open("s.s-1", sealed)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, body) {
		t.Fatalf("Open = %q, want %q", got, body)
	}
	if base64.RawURLEncoding.EncodedLen(sha256.Size)+len("sfr2.")+protocol.MaxKeyIDBytes+2 != recordauth.Overhead {
		t.Errorf("Overhead %d does not match the encoding", recordauth.Overhead)
	}
}

func TestOpenRefuses(t *testing.T) {
	frame := frameKey(t, 1)
	k := derive(t, frame, recordauth.StoreSessions)
	body := []byte(`{"id":"s-1","state":"completed","value":"hi"}`)
	sealed := k.Seal("s.s-1", body)
	tampered := bytes.Clone(sealed)
	tampered[len(tampered)-3] ^= 1
	badTag := bytes.Clone(sealed)
	badTag[len("sfr2.")+len(protocol.KeyIDOf(frame))+2] = '!'
	tests := []struct {
		name       string
		key        recordauth.Key
		recordName string
		data       []byte
		wantErr    error
		wantReason string
	}{
		{"unsigned JSON, as stored before sealing", k, "s.s-1", body, recordauth.ErrUnsigned, recordauth.ReasonUnsigned},
		{"empty", k, "s.s-1", nil, recordauth.ErrUnsigned, recordauth.ReasonUnsigned},
		{"body altered", k, "s.s-1", tampered, recordauth.ErrBadTag, recordauth.ReasonBadTag},
		{"moved to another key", k, "s.s-2", sealed, recordauth.ErrBadTag, recordauth.ReasonBadTag},
		{"another store's key", derive(t, frame, recordauth.StoreJournal), "s.s-1", sealed, recordauth.ErrBadTag, recordauth.ReasonBadTag},
		{"another frame key", derive(t, frameKey(t, 2), recordauth.StoreSessions), "s.s-1", sealed, recordauth.ErrBadTag, recordauth.ReasonBadTag},
		{"malformed tag", k, "s.s-1", badTag, recordauth.ErrBadTag, recordauth.ReasonBadTag},
		{"v1 prefix only", k, "s.s-1", []byte("sfr1."), recordauth.ErrBadTag, recordauth.ReasonBadTag},
		{"v2 prefix only", k, "s.s-1", []byte("sfr2."), recordauth.ErrBadTag, recordauth.ReasonBadTag},
		{"an unknown key id", k, "s.s-1", append([]byte("sfr2.nope."), sealed[len("sfr2.")+len(protocol.KeyIDOf(frame))+1:]...), recordauth.ErrBadTag, recordauth.ReasonBadTag},
		{"zero key", recordauth.Key{}, "s.s-1", sealed, recordauth.ErrInvalidKey, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.key.Open(tt.recordName, tt.data)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Open = %q, %v; want %v", got, err, tt.wantErr)
			}
			if got != nil {
				t.Errorf("Open returned a body with its error: %q", got)
			}
			if r := recordauth.Reason(err); r != tt.wantReason {
				t.Errorf("Reason = %q, want %q", r, tt.wantReason)
			}
		})
	}
}

// The split between name and body is bound: moving bytes from the end of
// the name to the start of the body does not keep the tag.
func TestTagBindsTheNameLength(t *testing.T) {
	k := derive(t, frameKey(t, 1), recordauth.StoreJournal)
	sealed := k.Seal("ab", []byte("c"))
	moved := append([]byte(nil), sealed[:len(sealed)-1]...)
	moved = append(moved, "bc"...)
	if _, err := k.Open("a", moved); !errors.Is(err, recordauth.ErrBadTag) {
		t.Fatalf("Open = %v, want ErrBadTag", err)
	}
}

// A record names the key that sealed it: after a rotation the ring still
// opens records sealed with a retired key, and seals new ones with the
// current key; a ring without the sealing key refuses the record as
// ErrUnknownKey (and ErrBadTag, for callers that only know that).
func TestRingOpensWhatAnyOfItsKeysSealed(t *testing.T) {
	old := frameKey(t, 1)
	before := derive(t, old, recordauth.StoreLedger)
	sealedOld := before.Seal("l.s-1", []byte("old"))
	ring, err := old.Ring().Rotate(frameKey(t, 2))
	if err != nil {
		t.Fatal(err)
	}
	after, err := recordauth.Derive(ring, recordauth.StoreLedger)
	if err != nil {
		t.Fatal(err)
	}
	if body, err := after.Open("l.s-1", sealedOld); err != nil || string(body) != "old" {
		t.Fatalf("a retired key's record: %q, %v", body, err)
	}
	sealedNew := after.Seal("l.s-2", []byte("new"))
	if id, ok := recordauth.SealedBy(sealedNew); !ok || id != protocol.KeyIDOf(frameKey(t, 2)) {
		t.Fatalf("SealedBy(new) = %q, %v", id, ok)
	}
	if id, ok := recordauth.SealedBy(sealedOld); !ok || id != protocol.KeyIDOf(old) {
		t.Fatalf("SealedBy(old) = %q, %v", id, ok)
	}
	_, err = before.Open("l.s-2", sealedNew)
	if !errors.Is(err, recordauth.ErrUnknownKey) || !errors.Is(err, recordauth.ErrBadTag) {
		t.Fatalf("a ring without the sealing key: %v, want ErrUnknownKey and ErrBadTag", err)
	}
	dropped, err := ring.Drop(protocol.KeyIDOf(old))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := derive(t, dropped, recordauth.StoreLedger).Open("l.s-1", sealedOld); !errors.Is(err, recordauth.ErrUnknownKey) {
		t.Fatalf("a dropped key's record: %v, want ErrUnknownKey", err)
	}
}

// Records sealed before key rings ("sfr1.", no key id) still open under
// a ring holding their key, whichever key of the ring it is.
func TestRingOpensRecordsSealedBeforeRings(t *testing.T) {
	old := frameKey(t, 1)
	legacy := legacySeal(t, old, recordauth.StoreSessions, "s.s-1", []byte(`{"id":"s-1"}`))
	ring, err := old.Ring().Rotate(frameKey(t, 2))
	if err != nil {
		t.Fatal(err)
	}
	body, err := derive(t, ring, recordauth.StoreSessions).Open("s.s-1", legacy)
	if err != nil || string(body) != `{"id":"s-1"}` {
		t.Fatalf("Open = %q, %v", body, err)
	}
	if id, ok := recordauth.SealedBy(legacy); !ok || id != "" {
		t.Fatalf("SealedBy(v1) = %q, %v; want no id, sealed", id, ok)
	}
	if _, err := derive(t, frameKey(t, 3), recordauth.StoreSessions).Open("s.s-1", legacy); !errors.Is(err, recordauth.ErrBadTag) {
		t.Fatalf("another key: %v, want ErrBadTag", err)
	}
}

// legacySeal writes a record as Seal did before key rings: "sfr1.",
// the tag, a dot, the body.
func legacySeal(t *testing.T, frame protocol.SessionKey, store, name string, body []byte) []byte {
	t.Helper()
	secret := frame.Bytes()
	kb, err := hkdf.Key(sha256.New, secret[:], nil, "splash-fabric record key v1: "+store, sha256.Size)
	if err != nil {
		t.Fatal(err)
	}
	m := hmac.New(sha256.New, kb)
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(name)))
	m.Write(n[:])
	m.Write([]byte(name))
	m.Write(body)
	out := append([]byte("sfr1."), base64.RawURLEncoding.EncodeToString(m.Sum(nil))...)
	out = append(out, '.')
	return append(out, body...)
}

func TestDeriveRefuses(t *testing.T) {
	if _, err := recordauth.Derive(protocol.SessionKey{}, recordauth.StoreJournal); !errors.Is(err, recordauth.ErrInvalidKey) {
		t.Errorf("zero frame key: %v", err)
	}
	if _, err := recordauth.Derive(frameKey(t, 1), ""); !errors.Is(err, recordauth.ErrInvalidKey) {
		t.Errorf("empty label: %v", err)
	}
}

func TestKeyIsRedacted(t *testing.T) {
	k := derive(t, frameKey(t, 1), recordauth.StoreJournal)
	for _, s := range []string{fmt.Sprint(k), fmt.Sprintf("%#v", k), fmt.Sprintf("%+v", k)} {
		if s != "recordauth.Key(redacted)" {
			t.Errorf("formatted key %q", s)
		}
	}
}

func BenchmarkSeal(b *testing.B) {
	k, _ := recordauth.Derive(protocol.SessionKeyFromArray([32]byte{1}), recordauth.StoreJournal)
	body := bytes.Repeat([]byte("x"), 512)
	b.ReportAllocs()
	for b.Loop() {
		k.Seal("3f2a9c0d1e2b", body)
	}
}

func BenchmarkOpen(b *testing.B) {
	k, _ := recordauth.Derive(protocol.SessionKeyFromArray([32]byte{1}), recordauth.StoreJournal)
	sealed := k.Seal("3f2a9c0d1e2b", bytes.Repeat([]byte("x"), 512))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := k.Open("3f2a9c0d1e2b", sealed); err != nil {
			b.Fatal(err)
		}
	}
}
