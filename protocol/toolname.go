package protocol

import (
	"fmt"

	"github.com/splashfabric/splashfabric/internal/clip"
)

// MaxToolNameBytes bounds a tool name. Names become NATS subject tokens and
// consumer names, both of which have length limits of their own.
const MaxToolNameBytes = 128

// ValidateToolName accepts 1 to MaxToolNameBytes bytes of dot-separated,
// non-empty tokens of ASCII letters, digits, '_' and '-', such as
// "text.remote". The alphabet is the intersection of what NATS subjects,
// consumer names and script identifiers tolerate, so a legal name needs no
// escaping anywhere it travels; wildcards ('*', '>') and whitespace are
// therefore never legal.
func ValidateToolName(name string) error {
	if name == "" || len(name) > MaxToolNameBytes {
		return fmt.Errorf("%w: %d bytes: %q", ErrInvalidToolName, len(name), clip.String(name, clip.Echo))
	}
	tokenStart := true
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '.':
			if tokenStart {
				return fmt.Errorf("%w: empty token: %q", ErrInvalidToolName, name)
			}
			tokenStart = true
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_', c == '-':
			tokenStart = false
		default:
			return fmt.Errorf("%w: byte %q at %d: %q", ErrInvalidToolName, c, i, name)
		}
	}
	if tokenStart {
		return fmt.Errorf("%w: empty token: %q", ErrInvalidToolName, name)
	}
	return nil
}

// checkTool reports an illegal tool name inside a message as both an invalid
// message and an invalid tool name, so callers may match either.
func checkTool(name string) error {
	if err := ValidateToolName(name); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidMessage, err)
	}
	return nil
}
