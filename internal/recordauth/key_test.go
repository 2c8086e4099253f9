package recordauth_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
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

func derive(t *testing.T, frame protocol.SessionKey, store string) recordauth.Key {
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
	if len(sealed) != len(body)+recordauth.Overhead {
		t.Errorf("sealed %d bytes, want body + %d", len(sealed), recordauth.Overhead)
	}
	got, err := k.Open("s.s-1", sealed)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, body) {
		t.Fatalf("Open = %q, want %q", got, body)
	}
	if base64.RawURLEncoding.EncodedLen(sha256.Size)+len("sfr1.")+1 != recordauth.Overhead {
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
	badTag[6] = '!'
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
		{"prefix only", k, "s.s-1", []byte("sfr1."), recordauth.ErrBadTag, recordauth.ReasonBadTag},
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
	moved := append([]byte(nil), sealed[:recordauth.Overhead]...)
	moved = append(moved, "bc"...)
	if _, err := k.Open("a", moved); !errors.Is(err, recordauth.ErrBadTag) {
		t.Fatalf("Open = %v, want ErrBadTag", err)
	}
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
