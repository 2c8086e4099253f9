package host

import (
	"fmt"
	"slices"

	"github.com/splashfabric/splashfabric/internal/clip"
	"github.com/splashfabric/splashfabric/protocol"
)

// IsGrant reports whether name is a capability a Config may grant, so
// that a front end can refuse a misspelt grant instead of running the
// script without it.
func IsGrant(name string) bool { return slices.Contains(scriptCapabilities, name) }

// Grants returns every capability a Config may grant.
func Grants() []string { return slices.Clone(scriptCapabilities) }

// granted refuses a tool outside the session's tool patterns, before
// anything about the tool (whether it exists, its input) is looked at, so
// a session learns nothing of the tools it was not given. The refusal is
// audited and consumes nothing.
func (r *Runtime) granted(name string) error {
	if r.allowedErr == nil && r.allowed.Match(name) {
		return nil
	}
	var err error
	if r.allowedErr != nil {
		err = fmt.Errorf("%w: %q: the session's tools are malformed: %v", errToolNotGranted, clip.String(name, protocol.MaxToolNameBytes), r.allowedErr)
	} else {
		err = fmt.Errorf("%w: %q is not among the session's tools %q", errToolNotGranted, clip.String(name, protocol.MaxToolNameBytes), r.allowed.Strings())
	}
	r.recordTool(clip.String(name, protocol.MaxToolNameBytes), AuditDenied, "tool not granted")
	return err
}

// ToolGrants returns the session's tool patterns as given; nil when every
// tool is granted.
func (r *Runtime) ToolGrants() []string {
	if r.allowedErr != nil {
		return []string{}
	}
	return r.allowed.Strings()
}

// errToolNotGranted reads as ErrToolNotGranted and matches
// ErrCapabilityDenied too: a tool is a capability the session was not
// given.
var errToolNotGranted error = toolNotGranted{}

type toolNotGranted struct{}

func (toolNotGranted) Error() string   { return ErrToolNotGranted.Error() }
func (toolNotGranted) Unwrap() []error { return []error{ErrToolNotGranted, ErrCapabilityDenied} }
