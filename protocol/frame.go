package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"unicode/utf8"
)

// DefaultMaxFrameBytes is the line length ParseJSONLine accepts, not
// counting the final newline. It bounds the memory one peer can make the
// other spend before the tag has been checked.
const DefaultMaxFrameBytes = 1 << 20

// MaxSessionIDBytes bounds a session id; it is far above any id this
// project generates and keeps the MAC header small.
const MaxSessionIDBytes = 1024

// Frame is one sealed message. Message holds the exact JSON bytes the tag
// covers: a Frame is authenticated byte for byte, so it must travel as
// produced by ToJSONLine and be read with ParseJSONLine, both of which keep
// Message verbatim. Re-encoding a Frame with encoding/json is not safe, since
// it may rewrite Message (HTML escaping, compaction) and break the tag.
type Frame struct {
	// SessionID binds the frame to one session (in the fabric, one
	// request).
	SessionID string `json:"session_id"`
	// Role is the sender's role.
	Role SessionRole `json:"role"`
	// Sequence counts the sender's frames in this session from 1.
	Sequence uint64 `json:"seq"`
	// Message is the JSON encoding of a WorkerMessage.
	Message json.RawMessage `json:"msg"`
	// Tag is the lowercase hex HMAC-SHA256 of the canonical encoding of
	// the four fields above.
	Tag string `json:"tag"`
}

// ToJSONLine encodes f as one line of JSON ending in '\n', copying Message
// verbatim so the tag still verifies at the other end. It refuses a frame
// that ParseJSONLine would refuse for its shape; it does not apply a size
// limit, which is the receiver's to choose.
func (f Frame) ToJSONLine() ([]byte, error) {
	if err := f.checkShape(); err != nil {
		return nil, err
	}
	// Message is spliced in raw, so it must be one JSON value and must not
	// break the line.
	if bytes.IndexByte(f.Message, '\n') >= 0 || !validJSON(f.Message) {
		return nil, fmt.Errorf("%w: msg is not one line of JSON", ErrMalformedFrame)
	}
	// The layout is spelled once, in lineparse.go, so that parseExactLine
	// reads exactly what is written here.
	role := lineRoleHost
	if f.Role == RoleWorker {
		role = lineRoleWorker
	}
	b := make([]byte, 0, len(linePrefix)+2+len(lineRoleWorker)+len(lineMsg)+len(lineTag)+len(lineEnd)+1+
		2*len(f.SessionID)+20+len(f.Message)+len(f.Tag))
	b = append(b, linePrefix...)
	b = appendJSONString(b, f.SessionID)
	b = append(b, role...)
	b = strconv.AppendUint(b, f.Sequence, 10)
	b = append(b, lineMsg...)
	b = append(b, f.Message...)
	b = append(b, lineTag...)
	b = append(b, f.Tag...)
	b = append(b, lineEnd+"\n"...)
	return b, nil
}

// ParseJSONLine decodes one frame line of at most DefaultMaxFrameBytes. See
// ParseJSONLineLimit.
func ParseJSONLine(line []byte) (Frame, error) {
	return ParseJSONLineLimit(line, DefaultMaxFrameBytes)
}

// ParseJSONLineLimit decodes one frame line of at most max bytes (not
// counting one optional trailing '\n'; max <= 0 means
// DefaultMaxFrameBytes). It checks the frame's shape, not its tag: every
// field present, no unknown fields, nothing after the object, no newline
// inside it. An over-long line is ErrFrameTooLarge, checked before any
// parsing; every other refusal wraps ErrMalformedFrame. Parsing does not
// authenticate; pass the frame to Verify or Open.
func ParseJSONLineLimit(line []byte, max int) (Frame, error) {
	if max <= 0 {
		max = DefaultMaxFrameBytes
	}
	line = bytes.TrimSuffix(line, []byte{'\n'})
	if len(line) > max {
		return Frame{}, fmt.Errorf("%w: %d bytes, limit %d", ErrFrameTooLarge, len(line), max)
	}
	if i := bytes.IndexByte(line, '\n'); i >= 0 {
		return Frame{}, fmt.Errorf("%w: newline at byte %d of a frame line", ErrMalformedFrame, i)
	}
	// Lines as ToJSONLine writes them skip encoding/json; any other
	// spelling gets the strict decoder, which has the last word.
	f, ok := parseExactLine(line)
	if !ok {
		var err error
		if f, err = parseLineStrict(line); err != nil {
			return Frame{}, err
		}
	}
	if err := f.checkShape(); err != nil {
		if !isMalformed(err) {
			err = fmt.Errorf("%w: %w", ErrMalformedFrame, err)
		}
		return Frame{}, err
	}
	return f, nil
}

// parseLineStrict is ParseJSONLineLimit's slow path, kept apart so that its
// Frame, which encoding/json makes escape, is not the fast path's.
func parseLineStrict(line []byte) (Frame, error) {
	var f Frame
	if err := decodeStrict(line, &f); err != nil {
		return Frame{}, fmt.Errorf("%w: %v", ErrMalformedFrame, err)
	}
	return f, nil
}

// CheckShape checks everything about a frame that does not need the key,
// so a frame that passes can be hashed and its tag decoded without further
// checks: a session id of at most MaxSessionIDBytes of UTF-8, a role, a
// sequence from 1, a message that starts as a JSON object, and a tag of
// 2*AuthTagBytes lowercase hex digits. A transport that carries frames in
// another layout than the JSON line checks its frames with it before
// verifying them.
func (f Frame) CheckShape() error {
	return f.checkShape()
}

func (f Frame) checkShape() error {
	if err := validateSessionID(f.SessionID); err != nil {
		return err
	}
	if err := f.Role.Validate(); err != nil {
		return err
	}
	if f.Sequence < 1 {
		return fmt.Errorf("%w: seq %d, sequences count from 1", ErrSequence, f.Sequence)
	}
	if len(f.Message) == 0 || f.Message[0] != '{' {
		return fmt.Errorf("%w: msg is not a JSON object", ErrMalformedFrame)
	}
	if uint64(len(f.Message)) > math.MaxUint32 {
		return fmt.Errorf("%w: msg of %d bytes", ErrFrameTooLarge, len(f.Message))
	}
	if !isLowerHex(f.Tag, 2*AuthTagBytes) {
		return fmt.Errorf("%w: tag is not %d lowercase hex digits", ErrMalformedFrame, 2*AuthTagBytes)
	}
	return nil
}

func isMalformed(err error) bool {
	return err != nil && (errors.Is(err, ErrMalformedFrame) || errors.Is(err, ErrFrameTooLarge))
}

// validateSessionID requires valid UTF-8 because encoding/json would replace
// invalid bytes on the way through and so change what the tag covers.
func validateSessionID(id string) error {
	switch {
	case id == "":
		return fmt.Errorf("%w: empty session id", ErrInvalidSession)
	case len(id) > MaxSessionIDBytes:
		return fmt.Errorf("%w: session id of %d bytes, limit %d", ErrInvalidSession, len(id), MaxSessionIDBytes)
	case !utf8.ValidString(id):
		return fmt.Errorf("%w: session id is not UTF-8: %q", ErrInvalidSession, truncateString(id))
	}
	return nil
}

// decodeStrict decodes exactly one JSON value into v, refusing unknown
// fields and trailing data: a frame has one spelling, so fields a peer adds
// are refused rather than silently dropped.
func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("data after the JSON value")
	}
	return nil
}

func isLowerHex[T string | []byte](s T, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// appendJSONString appends s as a JSON string. s is valid UTF-8 (checked by
// validateSessionID), so only quotes, backslashes and control bytes need
// escaping, and decoding gives back exactly s.
func appendJSONString(b []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
