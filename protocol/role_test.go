package protocol_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/splashfabric/splashfabric/protocol"
)

func TestSessionRoleNamesAndPeers(t *testing.T) {
	tests := []struct {
		role protocol.SessionRole
		name string
		peer protocol.SessionRole
	}{
		{protocol.RoleHost, "host", protocol.RoleWorker},
		{protocol.RoleWorker, "worker", protocol.RoleHost},
		{0, "SessionRole(0)", 0},
		{3, "SessionRole(3)", 0},
	}
	for _, tc := range tests {
		if got := tc.role.String(); got != tc.name {
			t.Errorf("String() = %q, want %q", got, tc.name)
		}
		if got := tc.role.Peer(); got != tc.peer {
			t.Errorf("%s.Peer() = %v, want %v", tc.name, got, tc.peer)
		}
	}
}

func TestSessionRoleJSONIsItsName(t *testing.T) {
	tests := []struct {
		in      string
		want    protocol.SessionRole
		wantErr error
	}{
		{`"host"`, protocol.RoleHost, nil},
		{`"worker"`, protocol.RoleWorker, nil},
		{`"Host"`, 0, protocol.ErrWrongRole},
		{`1`, 0, protocol.ErrWrongRole},
		{`""`, 0, protocol.ErrWrongRole},
		{`null`, 0, protocol.ErrWrongRole},
	}
	for _, tc := range tests {
		var r protocol.SessionRole
		err := json.Unmarshal([]byte(tc.in), &r)
		wantErr(t, tc.in, err, tc.wantErr)
		if r != tc.want {
			t.Fatalf("%s: got %v, want %v", tc.in, r, tc.want)
		}
		if err == nil {
			out, err := json.Marshal(r)
			if err != nil || string(out) != tc.in {
				t.Fatalf("%s: marshals as %s, %v", tc.in, out, err)
			}
		}
	}
	if _, err := json.Marshal(protocol.SessionRole(0)); err == nil {
		t.Fatal("marshalled the zero role")
	}
}

func TestParseSessionRole(t *testing.T) {
	tests := []struct {
		in      string
		want    protocol.SessionRole
		wantErr error
	}{
		{"host", protocol.RoleHost, nil},
		{"worker", protocol.RoleWorker, nil},
		{"Host", 0, protocol.ErrWrongRole},
		{"", 0, protocol.ErrWrongRole},
		{"SessionRole(1)", 0, protocol.ErrWrongRole},
	}
	for _, tc := range tests {
		got, err := protocol.ParseSessionRole(tc.in)
		if got != tc.want || !errors.Is(err, tc.wantErr) {
			t.Errorf("ParseSessionRole(%q) = %v, %v; want %v, %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}
