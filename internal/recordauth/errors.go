package recordauth

import "errors"

// Errors of Open and Derive.
var (
	// ErrUnsigned reports a record without an authentication tag: stored
	// before records were sealed, or by a writer without the key.
	ErrUnsigned = errors.New("recordauth: record is not sealed")
	// ErrBadTag reports a sealed record whose tag does not verify under
	// the key and storage key it was read with: forged, altered, moved
	// from another key, or sealed with another frame key.
	ErrBadTag = errors.New("recordauth: record tag does not verify")
	// ErrUnknownKey reports a record sealed with a key the ring does not
	// hold (dropped too early, or not yet given to this process); it
	// comes wrapped in ErrBadTag, as the record cannot be trusted.
	ErrUnknownKey = errors.New("recordauth: record sealed with a key not in the ring")
	// ErrInvalidKey reports a zero frame key or an empty store label.
	ErrInvalidKey = errors.New("recordauth: invalid key")
)

// Reasons a record is refused, as metric labels.
const (
	ReasonUnsigned = "unsigned"
	ReasonBadTag   = "bad_tag"
)

// Reason returns the label of an error Open returned: ReasonUnsigned,
// ReasonBadTag, or "" for any other error.
func Reason(err error) string {
	switch {
	case errors.Is(err, ErrUnsigned):
		return ReasonUnsigned
	case errors.Is(err, ErrBadTag):
		return ReasonBadTag
	}
	return ""
}
