package splashtool

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/protocol"
)

func TestReadKey(t *testing.T) {
	hexKey := strings.Repeat("0a", protocol.AuthTagBytes)
	tests := []struct {
		name    string
		in      string
		wantErr error
	}{
		{"hex and newline", hexKey + "\n", nil},
		{"no newline", hexKey, ErrEnvironment},
		{"two newlines", hexKey + "\n\n", ErrEnvironment},
		{"upper case", strings.ToUpper(hexKey) + "\n", protocol.ErrInvalidKey},
		{"short", hexKey[2:] + "\n", protocol.ErrInvalidKey},
		{"not hex", strings.Repeat("zz", protocol.AuthTagBytes) + "\n", protocol.ErrInvalidKey},
		{"empty", "", ErrEnvironment},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key, err := readKey(strings.NewReader(tt.in))
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err %v, want %v", err, tt.wantErr)
			}
			if err == nil && key.Bytes()[0] != 0x0a {
				t.Fatalf("key bytes %x", key.Bytes())
			}
			if err != nil && strings.Contains(err.Error(), "0a0a") {
				t.Fatalf("error echoes the key: %v", err)
			}
		})
	}
}

func TestCeilMillis(t *testing.T) {
	for in, want := range map[int64]int64{0: 0, -5: 0, 1: 1, 1_000_000: 1, 1_000_001: 2, 2_500_000_000: 2500} {
		if got := ceilMillis(time.Duration(in)); got != want {
			t.Errorf("ceilMillis(%d) = %d, want %d", in, got, want)
		}
	}
}
