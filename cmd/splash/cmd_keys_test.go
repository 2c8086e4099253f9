package main

import (
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/splashfabric/splashfabric/protocol"
)

// splash keys walks a ring through the two-step rotation: stage a next
// key, promote it, drop the retired key; each step rewrites the file in
// place and keeps its mode, and a refused step leaves it as it was.
func TestKeysRotateStagePromoteDrop(t *testing.T) {
	path := filepath.Join(t.TempDir(), "frame.key")
	k, err := protocol.GenerateSessionKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	raw := k.Bytes()
	// A key file as written before rings: one bare key.
	if err := os.WriteFile(path, []byte(hex.EncodeToString(raw[:])+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	first := protocol.KeyIDOf(k)
	read := func() protocol.KeyRing {
		t.Helper()
		r, err := loadKeyRing(path)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}

	if code, out, errOut := invoke(t, nil, "keys", "rotate", "--stage", "--key-file", path); code != 0 || !strings.Contains(out, "staged") {
		t.Fatalf("stage: %d %q %q", code, out, errOut)
	}
	staged := read()
	if id, _ := staged.Current(); id != first || staged.Len() != 2 {
		t.Fatalf("staged ring %v", staged)
	}
	if code, _, _ := invoke(t, nil, "keys", "rotate", "--stage", "--key-file", path); code == 0 {
		t.Fatal("a second next key was staged")
	}
	if code, out, errOut := invoke(t, nil, "keys", "rotate", "--key-file", path); code != 0 || !strings.Contains(out, "promoted") {
		t.Fatalf("promote: %d %q %q", code, out, errOut)
	}
	promoted := read()
	if id, _ := promoted.Current(); id == first || promoted.Len() != 2 {
		t.Fatalf("promoted ring %v", promoted)
	}
	if code, _, _ := invoke(t, nil, "keys", "drop", "--key-file", path, "nope"); code == 0 {
		t.Fatal("dropped an unknown key")
	}
	cur, _ := promoted.Current()
	if code, _, _ := invoke(t, nil, "keys", "drop", "--key-file", path, cur); code == 0 {
		t.Fatal("dropped the current key")
	}
	if got := read(); got.String() != promoted.String() {
		t.Fatalf("a refused drop changed the ring: %v", got)
	}
	if code, out, errOut := invoke(t, nil, "keys", "drop", "--key-file", path, first); code != 0 || !strings.Contains(out, "dropped "+first) {
		t.Fatalf("drop: %d %q %q", code, out, errOut)
	}
	if got := read(); got.Len() != 1 {
		t.Fatalf("after drop: %v", got)
	}
	// Without a staged key, rotate makes a fresh key current at once.
	if code, out, errOut := invoke(t, nil, "keys", "rotate", "--key-file", path); code != 0 || !strings.Contains(out, "rotated to") {
		t.Fatalf("rotate: %d %q %q", code, out, errOut)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o644 {
		t.Fatalf("mode after rewrites: %v, %v", st.Mode().Perm(), err)
	}
}
