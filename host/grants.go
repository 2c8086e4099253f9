package host

import "slices"

// IsGrant reports whether name is a capability a Config may grant, so
// that a front end can refuse a misspelt grant instead of running the
// script without it.
func IsGrant(name string) bool { return slices.Contains(scriptCapabilities, name) }

// Grants returns every capability a Config may grant.
func Grants() []string { return slices.Clone(scriptCapabilities) }
