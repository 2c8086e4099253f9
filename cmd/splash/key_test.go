package main

import (
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/splashfabric/splashfabric/protocol"
)

func TestLoadKeyRing(t *testing.T) {
	var raw [protocol.AuthTagBytes]byte
	for i := range raw {
		raw[i] = byte(i)
	}
	want := protocol.SessionKeyFromArray(raw)
	hexKey := "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name    string
		path    string
		wantErr []error
	}{
		{name: "hex with newline", path: write("hex", hexKey+"\n")},
		{name: "base64", path: write("b64", base64.StdEncoding.EncodeToString(raw[:]))},
		{name: "no path", path: "", wantErr: []error{errKeyFile}},
		{name: "missing file", path: filepath.Join(dir, "absent"), wantErr: []error{errKeyFile, os.ErrNotExist}},
		{name: "short key", path: write("short", hexKey[:62]), wantErr: []error{errKeyFile, protocol.ErrInvalidKey}},
		{name: "empty file", path: write("empty", ""), wantErr: []error{errKeyFile, protocol.ErrInvalidKey}},
		{name: "too large", path: write("large", strings.Repeat("a", maxKeyFileBytes+1)), wantErr: []error{errKeyFile}},
		{name: "a ring", path: write("ring", "# a ring\ncurrent k1 "+hexKey+"\nretired k0 "+strings.Repeat("ab", 32)+"\n")},
		{name: "a ring without a current key", path: write("nocurrent", "retired k1 "+hexKey+"\n"), wantErr: []error{errKeyFile, protocol.ErrInvalidKey}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := loadKeyRing(tt.path)
			for _, w := range tt.wantErr {
				if !errors.Is(err, w) {
					t.Errorf("err %v, want %v", err, w)
				}
			}
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatalf("loadKeyRing: %v", err)
				}
				if _, cur := got.Current(); !cur.Equal(want) {
					t.Errorf("current key differs from the file's")
				}
			}
			if err != nil && strings.Contains(err.Error(), hexKey[:16]) {
				t.Errorf("error echoes key material: %v", err)
			}
		})
	}
}

// A generated ring is written once, exclusively, 0600; a second call
// reads it back, and a rotation written over it keeps the mode.
func TestCreateAndWriteKeyRing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "frame.key")
	ring, wrote, err := createKeyRing(path, 0o600)
	if err != nil || !wrote {
		t.Fatalf("createKeyRing = %v, %v", wrote, err)
	}
	again, wrote, err := createKeyRing(path, 0o600)
	if err != nil || wrote || again.String() != ring.String() {
		t.Fatalf("second createKeyRing = %v, %v, %v", again, wrote, err)
	}
	next, err := protocol.GenerateSessionKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	rotated, err := ring.Rotate(next)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeKeyRing(path, rotated, 0o600); err != nil {
		t.Fatal(err)
	}
	back, err := loadKeyRing(path)
	if err != nil || back.String() != rotated.String() {
		t.Fatalf("loadKeyRing after write = %v, %v", back, err)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, %v", st.Mode().Perm(), err)
	}
}
