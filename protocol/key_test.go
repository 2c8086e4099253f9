package protocol_test

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/splashfabric/splashfabric/protocol"
)

func TestSessionKeyRejectsWrongLength(t *testing.T) {
	tests := []struct {
		name    string
		n       int
		wantErr error
	}{
		{"empty", 0, protocol.ErrInvalidKey},
		{"one short", protocol.AuthTagBytes - 1, protocol.ErrInvalidKey},
		{"exact", protocol.AuthTagBytes, nil},
		{"one long", protocol.AuthTagBytes + 1, protocol.ErrInvalidKey},
		{"hex length passed as bytes", 2 * protocol.AuthTagBytes, protocol.ErrInvalidKey},
	}
	for _, tc := range tests {
		k, err := protocol.NewSessionKey(bytes.Repeat([]byte{7}, tc.n))
		wantErr(t, tc.name, err, tc.wantErr)
		if err != nil && !k.IsZero() {
			t.Fatalf("%s: rejected key is not zero", tc.name)
		}
		if err == nil && !k.Equal(testKey) {
			t.Fatalf("%s: key differs from the same bytes as an array", tc.name)
		}
	}
}

func TestNewSessionKeyCopiesInput(t *testing.T) {
	b := bytes.Repeat([]byte{7}, protocol.AuthTagBytes)
	k, err := protocol.NewSessionKey(b)
	if err != nil {
		t.Fatal(err)
	}
	b[0] = 8
	if !k.Equal(testKey) {
		t.Fatal("key changed with the caller's buffer")
	}
}

func TestParseSessionKey(t *testing.T) {
	raw := testKeyBytes[:]
	tests := []struct {
		name    string
		in      string
		wantErr error
	}{
		{"hex", hex.EncodeToString(raw), nil},
		{"upper hex", strings.ToUpper(hex.EncodeToString(raw)), nil},
		{"hex with file newline", hex.EncodeToString(raw) + "\n", nil},
		{"base64", base64.StdEncoding.EncodeToString(raw), nil},
		{"raw base64", base64.RawStdEncoding.EncodeToString(raw), nil},
		{"url base64", base64.URLEncoding.EncodeToString(raw), nil},
		{"empty", "", protocol.ErrInvalidKey},
		{"short hex", hex.EncodeToString(raw[:31]), protocol.ErrInvalidKey},
		{"long hex", hex.EncodeToString(append(raw, 7)), protocol.ErrInvalidKey},
		{"short base64", base64.StdEncoding.EncodeToString(raw[:31]), protocol.ErrInvalidKey},
		{"not hex", strings.Repeat("zz", protocol.AuthTagBytes), protocol.ErrInvalidKey},
	}
	for _, tc := range tests {
		k, err := protocol.ParseSessionKey(tc.in)
		wantErr(t, tc.name, err, tc.wantErr)
		if err == nil && !k.Equal(testKey) {
			t.Fatalf("%s: parsed a different key", tc.name)
		}
		if err != nil && tc.in != "" && strings.Contains(err.Error(), strings.TrimSpace(tc.in)) {
			t.Fatalf("%s: error echoes the key material: %v", tc.name, err)
		}
	}
}

func TestSessionKeyNeverPrintsItsBytes(t *testing.T) {
	secret := hex.EncodeToString(testKeyBytes[:])
	js, err := json.Marshal(testKey)
	if err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{
		fmt.Sprint(testKey), fmt.Sprintf("%s %v %+v %#v %x %q", testKey, testKey, testKey, testKey, testKey, testKey),
		fmt.Sprintf("%v", struct{ K protocol.SessionKey }{testKey}), string(js),
	} {
		if strings.Contains(out, secret) || strings.Contains(out, "7 7 7") || strings.Contains(out, "0707") {
			t.Fatalf("key material in %q", out)
		}
	}
}

func TestZeroSessionKeyIsRefused(t *testing.T) {
	var zero protocol.SessionKey
	if !zero.IsZero() || testKey.IsZero() {
		t.Fatal("IsZero wrong")
	}
	_, err := protocol.NewSessionAuthenticator("s", zero, protocol.RoleHost)
	wantErr(t, "authenticator", err, protocol.ErrInvalidKey)
	msg := oneOfEach(t)[0]
	_, err = protocol.SealFrame(zero, "s", protocol.RoleHost, 1, msg)
	wantErr(t, "SealFrame", err, protocol.ErrInvalidKey)
	f, err := protocol.SealFrame(testKey, "s", protocol.RoleHost, 1, msg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = protocol.NewSigner(zero).Verify(f)
	wantErr(t, "Verify", err, protocol.ErrInvalidKey)
}

func TestGenerateSessionKey(t *testing.T) {
	k, err := protocol.GenerateSessionKey(bytes.NewReader(testKeyBytes[:]))
	if err != nil || !k.Equal(testKey) {
		t.Fatalf("from reader: %v", err)
	}
	a, err := protocol.GenerateSessionKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := protocol.GenerateSessionKey(nil)
	if a.Equal(b) || a.IsZero() {
		t.Fatal("crypto/rand keys repeat or are zero")
	}
	_, err = protocol.GenerateSessionKey(iotest.ErrReader(fmt.Errorf("no entropy")))
	wantErr(t, "failing source", err, protocol.ErrInvalidKey)
	_, err = protocol.GenerateSessionKey(bytes.NewReader(make([]byte, 31)))
	wantErr(t, "short source", err, protocol.ErrInvalidKey)
}

func TestSessionKeyBytesIsACopy(t *testing.T) {
	b := testKey.Bytes()
	b[0] = 9
	if testKey.Bytes()[0] != 7 {
		t.Fatal("Bytes aliases the key")
	}
}
