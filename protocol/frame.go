package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	segjson "github.com/segmentio/encoding/json"
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
	// Message is spliced in raw, since encoding/json would compact and
	// re-escape it. A decoder hands back a value's own bytes without the
	// whitespace around it, so Message must be exactly one JSON object,
	// from its '{' to its '}', and must not break the line.
	if bytes.IndexByte(f.Message, '\n') >= 0 || f.Message[len(f.Message)-1] != '}' || !json.Valid(f.Message) {
		return nil, fmt.Errorf("%w: msg is not one line of JSON", ErrMalformedFrame)
	}
	// The session id is valid UTF-8 (checkShape), so its JSON string
	// decodes back to exactly the bytes the tag covers.
	session, err := json.Marshal(f.SessionID)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformedFrame, err)
	}
	b := make([]byte, 0, 64+len(session)+len(f.Message)+len(f.Tag))
	b = append(b, `{"session_id":`...)
	b = append(b, session...)
	b = append(b, `,"role":"`...)
	b = append(b, f.Role.String()...)
	b = append(b, `","seq":`...)
	b = strconv.AppendUint(b, f.Sequence, 10)
	b = append(b, `,"msg":`...)
	b = append(b, f.Message...)
	b = append(b, `,"tag":"`...)
	b = append(b, f.Tag...)
	b = append(b, "\"}\n"...)
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
// authenticate; pass the frame to Verify or Open. Message keeps the exact
// bytes of the line's msg value, which the tag covers.
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
	var f Frame
	if err := decodeStrict(line, &f); err != nil {
		return Frame{}, fmt.Errorf("%w: %v", ErrMalformedFrame, err)
	}
	if err := f.checkShape(); err != nil {
		if !isMalformed(err) {
			err = fmt.Errorf("%w: %w", ErrMalformedFrame, err)
		}
		return Frame{}, err
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
		return fmt.Errorf("%w: session id of %d bytes is not UTF-8", ErrInvalidSession, len(id))
	}
	return nil
}

// decodeStrict decodes exactly one JSON value into v, refusing unknown
// fields, names spelled in another case, and trailing data: a frame has
// one spelling, so fields a peer adds are refused rather than silently
// dropped. Every frame a host or worker opens comes through here, so it
// uses segmentio's decoder: the same rules as encoding/json's strict
// Decoder at about an eighth of its time and a third of its allocations
// (see docs/decisions/0012-one-frame-codec-segmentio-strict.md).
//
// Its errors say what is wrong and where, never with the bytes it read:
// frames and messages come from peers, a tool process among them, and an
// error travels to logs, audit events and the error a script sees.
func decodeStrict(data []byte, v any) error {
	rest, err := segjson.Parse(data, v, segjson.DisallowUnknownFields|segjson.DontMatchCaseInsensitiveStructFields)
	if err != nil {
		return describeDecodeError(err)
	}
	if len(bytes.TrimLeft(rest, " \t\r\n")) != 0 {
		return fmt.Errorf("data after the JSON value")
	}
	return nil
}

// describeDecodeError is a decoding error without what it quoted: a
// syntax error's or a type error's byte offset, or the kind of fault.
func describeDecodeError(err error) error {
	var syn *segjson.SyntaxError
	var typ *segjson.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Errorf("invalid JSON at byte %d", syn.Offset)
	case errors.As(err, &typ):
		return fmt.Errorf("a value of the wrong type at byte %d", typ.Offset)
	case strings.HasPrefix(err.Error(), "json: unknown field"):
		return errors.New("a field the format does not define")
	}
	return errors.New("not a JSON value of the expected shape")
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
