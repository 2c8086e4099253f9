package protocol

import (
	"fmt"
	"strconv"

	"github.com/splashfabric/splashfabric/internal/clip"
)

// SessionRole names which end of a session sealed a frame. It is part of the
// tag's input, so a frame cannot be reflected back to its sender as if the
// peer had written it.
type SessionRole uint8

// The two roles. Zero is deliberately not a role, so an unset field is caught.
const (
	RoleHost   SessionRole = 1
	RoleWorker SessionRole = 2
)

// String returns "host" or "worker", the names used on the wire.
func (r SessionRole) String() string {
	switch r {
	case RoleHost:
		return "host"
	case RoleWorker:
		return "worker"
	}
	return "SessionRole(" + strconv.Itoa(int(r)) + ")"
}

// Peer returns the role at the other end of a session; an invalid role has
// no peer and returns zero.
func (r SessionRole) Peer() SessionRole {
	switch r {
	case RoleHost:
		return RoleWorker
	case RoleWorker:
		return RoleHost
	}
	return 0
}

// Validate refuses anything but RoleHost and RoleWorker.
func (r SessionRole) Validate() error {
	if r != RoleHost && r != RoleWorker {
		return fmt.Errorf("%w: %d", ErrWrongRole, uint8(r))
	}
	return nil
}

// ParseSessionRole reads a role's wire name, "host" or "worker"; anything
// else is ErrWrongRole.
func ParseSessionRole(name string) (SessionRole, error) {
	switch name {
	case "host":
		return RoleHost, nil
	case "worker":
		return RoleWorker, nil
	}
	return 0, fmt.Errorf("%w: %q", ErrWrongRole, clip.String(name, clip.Echo))
}

// MarshalJSON writes the role's name as a JSON string.
func (r SessionRole) MarshalJSON() ([]byte, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return []byte(`"` + r.String() + `"`), nil
}

// UnmarshalJSON accepts exactly "host" or "worker"; numbers and other names
// are refused, so the wire form has one spelling.
func (r *SessionRole) UnmarshalJSON(b []byte) error {
	switch string(b) {
	case `"host"`:
		*r = RoleHost
	case `"worker"`:
		*r = RoleWorker
	default:
		return fmt.Errorf("%w: %s", ErrWrongRole, clip.QuoteBytes(b, clip.Echo))
	}
	return nil
}
