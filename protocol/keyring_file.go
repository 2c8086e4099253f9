package protocol

import (
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/splashfabric/splashfabric/internal/clip"
)

// A key ring file holds one key per line, "<state> <id> <key>", where the
// state is current, next or retired, the id passes ValidateKeyID and the key
// is what ParseSessionKey reads (64 hex digits, or base64 of 32 bytes).
// Blank lines and lines starting with '#' are ignored:
//
//	# Splash key ring
//	current k3f9a0c1d2e4b 3f9a...
//	retired k0a1b2c3d4e5f 0a1b...
//
// A file holding nothing but one bare key, as key files did before rings,
// is a ring of one: that key, current, under KeyIDOf's id.

// ringFileHeader starts every file FileText writes.
const ringFileHeader = `# Splash key ring: one key per line, "<state> <id> <64 hex digits>".
# The current key seals; next and retired keys only verify. Rotate with
# splash keys rotate, drop a retired key with splash keys drop once
# splash keys status counts nothing sealed with it (docs/durable.md).
`

// ParseKeyRing reads a key ring file (see above). Errors name the line, never
// its contents; every one wraps ErrInvalidKey.
func ParseKeyRing(text string) (KeyRing, error) {
	var keys []RingKey
	bare := 0
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		switch len(fields) {
		case 1:
			k, err := ParseSessionKey(fields[0])
			if err != nil {
				return KeyRing{}, fmt.Errorf("line %d: %w", i+1, err)
			}
			bare++
			keys = append(keys, RingKey{ID: KeyIDOf(k), State: KeyCurrent, Key: k})
		case 3:
			st, ok := parseKeyState(fields[0])
			if !ok {
				return KeyRing{}, fmt.Errorf("%w: line %d: state %q, want current, next or retired", ErrInvalidKey, i+1, clip.String(fields[0], clip.Echo))
			}
			if err := ValidateKeyID(fields[1]); err != nil {
				return KeyRing{}, fmt.Errorf("line %d: %w", i+1, err)
			}
			k, err := ParseSessionKey(fields[2])
			if err != nil {
				return KeyRing{}, fmt.Errorf("line %d: %w", i+1, err)
			}
			keys = append(keys, RingKey{ID: fields[1], State: st, Key: k})
		default:
			return KeyRing{}, fmt.Errorf("%w: line %d has %d fields, want \"<state> <id> <key>\" or one bare key", ErrInvalidKey, i+1, len(fields))
		}
		if len(keys) > MaxRingKeys {
			return KeyRing{}, fmt.Errorf("%w: more than %d keys", ErrInvalidKey, MaxRingKeys)
		}
	}
	if bare > 0 && len(keys) > 1 {
		return KeyRing{}, fmt.Errorf("%w: a bare key must be alone in its file; write a ring as \"<state> <id> <key>\" lines", ErrInvalidKey)
	}
	return NewKeyRing(keys...)
}

// FileText returns r in the ring file format, with a comment header, for
// writing to its store. It holds every key: treat it as a secret.
func (r KeyRing) FileText() []byte {
	var b strings.Builder
	b.WriteString(ringFileHeader)
	for _, k := range r.keys {
		b.WriteString(k.State.String())
		b.WriteByte(' ')
		b.WriteString(k.ID)
		b.WriteByte(' ')
		raw := k.Key.Bytes()
		b.WriteString(hex.EncodeToString(raw[:]))
		b.WriteByte('\n')
	}
	return []byte(b.String())
}
