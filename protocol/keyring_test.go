package protocol_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/splashfabric/splashfabric/protocol"
)

func keyOf(fill byte) protocol.SessionKey {
	var b [protocol.AuthTagBytes]byte
	for i := range b {
		b[i] = fill
	}
	return protocol.SessionKeyFromArray(b)
}

func hexOf(k protocol.SessionKey) string {
	b := k.Bytes()
	return hex.EncodeToString(b[:])
}

func TestKeyIDOfIsStableAndValid(t *testing.T) {
	a, b := protocol.KeyIDOf(keyOf(1)), protocol.KeyIDOf(keyOf(2))
	if a == b {
		t.Fatalf("two keys share id %s", a)
	}
	if protocol.KeyIDOf(keyOf(1)) != a {
		t.Fatal("the id of a key changed between calls")
	}
	if err := protocol.ValidateKeyID(a); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(a, hexOf(keyOf(1))[:12]) {
		t.Fatalf("id %s repeats the key", a)
	}
}

func TestNewKeyRingRefuses(t *testing.T) {
	cur := protocol.RingKey{ID: "a", State: protocol.KeyCurrent, Key: keyOf(1)}
	tests := []struct {
		name string
		keys []protocol.RingKey
	}{
		{"no key", nil},
		{"no current key", []protocol.RingKey{{ID: "a", State: protocol.KeyRetired, Key: keyOf(1)}}},
		{"two current keys", []protocol.RingKey{cur, {ID: "b", State: protocol.KeyCurrent, Key: keyOf(2)}}},
		{"two next keys", []protocol.RingKey{cur, {ID: "b", State: protocol.KeyNext, Key: keyOf(2)}, {ID: "c", State: protocol.KeyNext, Key: keyOf(3)}}},
		{"an id twice", []protocol.RingKey{cur, {ID: "a", State: protocol.KeyRetired, Key: keyOf(2)}}},
		{"a key twice", []protocol.RingKey{cur, {ID: "b", State: protocol.KeyRetired, Key: keyOf(1)}}},
		{"a zero key", []protocol.RingKey{cur, {ID: "b", State: protocol.KeyRetired}}},
		{"an id with a dot", []protocol.RingKey{{ID: "a.b", State: protocol.KeyCurrent, Key: keyOf(1)}}},
		{"an empty id", []protocol.RingKey{{ID: "", State: protocol.KeyCurrent, Key: keyOf(1)}}},
		{"an unknown state", []protocol.RingKey{cur, {ID: "b", State: 9, Key: keyOf(2)}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := protocol.NewKeyRing(tc.keys...)
			if !errors.Is(err, protocol.ErrInvalidKey) {
				t.Fatalf("NewKeyRing = %v, %v; want ErrInvalidKey", r, err)
			}
			if !r.IsZero() {
				t.Fatal("a refused ring is not zero")
			}
		})
	}
}

// A bare key, as key files held before rings, is a ring of one under the
// id KeyIDOf derives; the same key written as a ring line gets the same id.
func TestParseKeyRingReadsABareKey(t *testing.T) {
	k := keyOf(5)
	r, err := protocol.ParseKeyRing(hexOf(k) + "\n")
	if err != nil {
		t.Fatal(err)
	}
	id, cur := r.Current()
	if id != protocol.KeyIDOf(k) || !cur.Equal(k) || r.Len() != 1 {
		t.Fatalf("bare key read as %v", r)
	}
	if got := k.Ring(); got.String() != r.String() {
		t.Fatalf("SessionKey.Ring = %v, ParseKeyRing = %v", got, r)
	}
}

func TestKeyRingFileRoundTrip(t *testing.T) {
	r, err := protocol.NewKeyRing(
		protocol.RingKey{ID: "old", State: protocol.KeyRetired, Key: keyOf(1)},
		protocol.RingKey{ID: "now", State: protocol.KeyCurrent, Key: keyOf(2)},
		protocol.RingKey{ID: "soon", State: protocol.KeyNext, Key: keyOf(3)},
	)
	if err != nil {
		t.Fatal(err)
	}
	back, err := protocol.ParseKeyRing(string(r.FileText()))
	if err != nil {
		t.Fatal(err)
	}
	if back.String() != r.String() || back.String() != "KeyRing(current now, next soon, retired old)" {
		t.Fatalf("round trip: %v, want %v", back, r)
	}
	for _, id := range r.IDs() {
		a, _ := r.Key(id)
		b, ok := back.Key(id)
		if !ok || !a.Equal(b) {
			t.Fatalf("key %s differs after the round trip", id)
		}
	}
}

func TestParseKeyRingRefuses(t *testing.T) {
	k1, k2 := hexOf(keyOf(1)), hexOf(keyOf(2))
	tests := []struct {
		name, text string
	}{
		{"empty", ""},
		{"comments only", "# nothing\n\n"},
		{"two bare keys", k1 + "\n" + k2 + "\n"},
		{"a bare key beside a ring line", "current a " + k1 + "\n" + k2 + "\n"},
		{"an unknown state", "current a " + k1 + "\nspare b " + k2 + "\n"},
		{"two fields", "current " + k1 + "\n"},
		{"a short key", "current a " + k1[:60] + "\n"},
		{"no current key", "retired a " + k1 + "\n"},
		{"an id with a space of its own", "current a b " + k1 + "\n"},
		{"too many keys", strings.Repeat("retired x "+k1+"\n", protocol.MaxRingKeys+1)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := protocol.ParseKeyRing(tc.text)
			if !errors.Is(err, protocol.ErrInvalidKey) {
				t.Fatalf("ParseKeyRing = %v, want ErrInvalidKey", err)
			}
			if strings.Contains(err.Error(), k1[:16]) || strings.Contains(err.Error(), k2[:16]) {
				t.Fatalf("error repeats key material: %v", err)
			}
		})
	}
}

// Stage, Promote, Rotate and Drop each return a new ring and leave the
// old one as it was; every refusal wraps ErrInvalidKey.
func TestKeyRingTransitions(t *testing.T) {
	one := keyOf(1).Ring()
	staged, err := one.Stage(keyOf(2))
	if err != nil {
		t.Fatal(err)
	}
	promoted, err := staged.Promote()
	if err != nil {
		t.Fatal(err)
	}
	id1, id2, id3 := protocol.KeyIDOf(keyOf(1)), protocol.KeyIDOf(keyOf(2)), protocol.KeyIDOf(keyOf(3))
	if got, want := promoted.String(), fmt.Sprintf("KeyRing(current %s, retired %s)", id2, id1); got != want {
		t.Fatalf("promoted = %s, want %s", got, want)
	}
	rotated, err := promoted.Rotate(keyOf(3))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := rotated.String(), fmt.Sprintf("KeyRing(current %s, retired %s, retired %s)", id3, id2, id1); got != want {
		t.Fatalf("rotated = %s, want %s", got, want)
	}
	dropped, err := rotated.Drop(id1)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := dropped.Key(id1); ok || dropped.Len() != 2 {
		t.Fatalf("dropped = %v", dropped)
	}
	if one.Len() != 1 || staged.Len() != 2 || rotated.Len() != 3 {
		t.Fatal("a transition changed the ring it was called on")
	}

	refusals := []struct {
		name string
		do   func() (protocol.KeyRing, error)
	}{
		{"promote without a next key", one.Promote},
		{"stage a second next key", func() (protocol.KeyRing, error) { return staged.Stage(keyOf(3)) }},
		{"stage a key the ring holds", func() (protocol.KeyRing, error) { return one.Stage(keyOf(1)) }},
		{"drop the current key", func() (protocol.KeyRing, error) { return rotated.Drop(id3) }},
		{"drop an unknown key", func() (protocol.KeyRing, error) { return rotated.Drop("nope") }},
		{"rotate the zero ring", func() (protocol.KeyRing, error) { return protocol.KeyRing{}.Rotate(keyOf(1)) }},
		{"rotate to the zero key", func() (protocol.KeyRing, error) { return one.Rotate(protocol.SessionKey{}) }},
	}
	for _, tc := range refusals {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tc.do(); !errors.Is(err, protocol.ErrInvalidKey) {
				t.Fatalf("err = %v, want ErrInvalidKey", err)
			}
		})
	}
}

func TestKeyRingNeverPrintsAKey(t *testing.T) {
	r, _ := keyOf(9).Ring().Stage(keyOf(10))
	for _, s := range []string{fmt.Sprint(r), fmt.Sprintf("%#v", r), fmt.Sprintf("%v", r.Keys())} {
		if strings.Contains(s, hexOf(keyOf(9))[:16]) || bytes.Contains([]byte(s), []byte{9, 9, 9}) {
			t.Fatalf("printed key material: %s", s)
		}
	}
}

// A ring file's current key seals; every key of the ring verifies, found by
// the id that travels with the seal.
func ExampleParseKeyRing() {
	text := `# Splash key ring
current k2 0202020202020202020202020202020202020202020202020202020202020202
retired k1 0101010101010101010101010101010101010101010101010101010101010101
`
	ring, err := protocol.ParseKeyRing(text)
	if err != nil {
		fmt.Println(err)
		return
	}
	id, _ := ring.Current()
	_, known := ring.Key("k1")
	fmt.Println(ring, "seals with", id, "and still verifies k1:", known)
	// Output: KeyRing(current k2, retired k1) seals with k2 and still verifies k1: true
}
