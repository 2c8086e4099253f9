package toolspec

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/splashfabric/splashfabric/internal/clip"
)

// Duration is a time.Duration written in a catalog as a string that
// time.ParseDuration accepts, such as "30s" or "1m30s". A bare number is
// refused: its unit would be a guess.
type Duration time.Duration

// String formats d as time.Duration does.
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalJSON writes d as a duration string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads a duration string. Range checks are Spec.Validate's.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("%w: a duration is a string such as \"30s\", not %s", ErrInvalidValue, jsonKind(b))
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%w: %q is not a duration such as \"30s\"", ErrInvalidValue, clip.String(s, clip.Echo))
	}
	*d = Duration(v)
	return nil
}
