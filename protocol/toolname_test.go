package protocol_test

import (
	"strings"
	"testing"

	"github.com/splashfabric/splashfabric/protocol"
)

func TestValidateToolName(t *testing.T) {
	tests := []struct {
		name    string
		wantErr error
	}{
		{"text", nil},
		{"text.remote", nil},
		{"a.b-c.D_9", nil},
		{strings.Repeat("a", protocol.MaxToolNameBytes), nil},
		{"", protocol.ErrInvalidToolName},
		{strings.Repeat("a", protocol.MaxToolNameBytes+1), protocol.ErrInvalidToolName},
		{".text", protocol.ErrInvalidToolName},
		{"text.", protocol.ErrInvalidToolName},
		{"text..remote", protocol.ErrInvalidToolName},
		{".", protocol.ErrInvalidToolName},
		{"text.*", protocol.ErrInvalidToolName},
		{"text.>", protocol.ErrInvalidToolName},
		{"text remote", protocol.ErrInvalidToolName},
		{"text/remote", protocol.ErrInvalidToolName},
		{"tëxt", protocol.ErrInvalidToolName},
		{"text\x00", protocol.ErrInvalidToolName},
	}
	for _, tc := range tests {
		wantErr(t, tc.name, protocol.ValidateToolName(tc.name), tc.wantErr)
	}
}
