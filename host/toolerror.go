package host

import "errors"

// ToolErrorKind classifies why an operation did not succeed. Kinds are
// errors themselves, so errors.Is(err, host.ToolTimedOut) matches a
// *ToolError of that kind.
type ToolErrorKind string

// Tool error kinds.
const (
	ToolFailed        ToolErrorKind = "failed"
	ToolTimedOut      ToolErrorKind = "timed_out"
	ToolCancelled     ToolErrorKind = "cancelled"
	ToolInvalidOutput ToolErrorKind = "invalid_output"
)

// Error returns the kind's name.
func (k ToolErrorKind) Error() string { return "tool " + string(k) }

// ToolError is how a failed, timed-out, cancelled or invalid result
// reaches the caller of a promise or Call.
type ToolError struct {
	Tool   string
	Kind   ToolErrorKind
	Reason string
}

// Error describes the failure.
func (e *ToolError) Error() string {
	if e.Reason == "" {
		return "tool " + e.Tool + ": " + string(e.Kind)
	}
	return "tool " + e.Tool + ": " + string(e.Kind) + ": " + e.Reason
}

// Is matches the error's kind, and ErrInvalidOutput for invalid output.
func (e *ToolError) Is(target error) bool {
	if k, ok := target.(ToolErrorKind); ok {
		return k == e.Kind
	}
	return e.Kind == ToolInvalidOutput && errors.Is(ErrInvalidOutput, target)
}
