package protocol

import (
	"errors"
	"math"
	"testing"
)

func TestSealRejectsExhaustedSequence(t *testing.T) {
	a, err := NewSessionAuthenticator("s", SessionKeyFromArray([AuthTagBytes]byte{1}), RoleHost)
	if err != nil {
		t.Fatal(err)
	}
	a.lastSent = math.MaxUint64 - 1
	msg := ChunkMessage(Chunk{RequestID: "r", Sequence: 1})
	f, err := a.Seal(msg)
	if err != nil || f.Sequence != math.MaxUint64 {
		t.Fatalf("last sequence: %+v %v", f, err)
	}
	if _, err := a.Seal(msg); !errors.Is(err, ErrSequence) {
		t.Fatalf("after the last sequence: %v", err)
	}
	if a.lastSent != math.MaxUint64 {
		t.Fatal("exhausted Seal changed state")
	}
}
