package fabric

import (
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go"

	"github.com/splashfabric/splashfabric/protocol"
)

// Over NATS a frame travels as one message: its metadata in the headers
// below and its message, the exact bytes the tag covers, as the body. The
// body is never re-encoded between sealing and verifying, so nothing has
// to be spliced or escaped, and a receiver reads the metadata without
// parsing the body. (Stdio tools keep the one-line JSON form,
// protocol.Frame.ToJSONLine.)
//
// The role travels too, although the subject implies it: a frame checked
// for the wrong role is refused before its HMAC is computed, and the
// refusal says protocol.ErrWrongRole (a reflected frame) instead of a bad
// tag, which the host's reject counters and the worker's observer report
// apart.
const (
	// HeaderSession is the frame's session id: the request id.
	HeaderSession = "Splash-Session"
	// HeaderRole is the sender's role, "host" or "worker".
	HeaderRole = "Splash-Role"
	// HeaderSeq is the frame's sequence in decimal, without leading zeros.
	HeaderSeq = "Splash-Seq"
	// HeaderTag is the frame's tag: 64 lowercase hex digits.
	HeaderTag = "Splash-Tag"
	// HeaderTool names the tool a worker's event or answer is for; its
	// token must be the subject's (ParseEventSubject), and the host
	// verifies the frame under the ring of that tool's pool.
	HeaderTool = "Splash-Tool"
	// HeaderKey is the id of the ring key that sealed the frame
	// (protocol.ValidateKeyID), so a receiver verifies with that key
	// without trying the others. It is not covered by the tag: a frame
	// whose id was changed is checked under another key and fails.
	HeaderKey = "Splash-Key"
)

// maxSeqDigits is the length of the largest uint64 in decimal.
const maxSeqDigits = 20

// FrameMsg lays out a sealed frame as a NATS message with no subject: its
// metadata in headers, its message as the body. The caller sets the
// subject and adds its own headers. A Codec lays out its own frames; this
// is for frames built with package protocol directly.
func FrameMsg(f protocol.Frame) *nats.Msg {
	return &nats.Msg{
		Header: nats.Header{
			HeaderSession: {f.SessionID},
			HeaderRole:    {f.Role.String()},
			HeaderSeq:     {strconv.FormatUint(f.Sequence, 10)},
			HeaderTag:     {f.Tag},
		},
		Data: f.Message,
	}
}

// checkHeaderSession refuses a session id that a header cannot carry
// verbatim: NATS headers end at CR or LF and lose leading blanks, and a
// frame whose session arrives changed would only fail its tag later.
func checkHeaderSession(id string) error {
	for i := 0; i < len(id); i++ {
		if c := id[i]; c < 0x20 || c == 0x7f {
			return fmt.Errorf("%w: session id has control byte 0x%02x at %d", protocol.ErrInvalidSession, c, i)
		}
	}
	if id != "" && (id[0] == ' ' || id[0] == '\t') {
		return fmt.Errorf("%w: session id starts with a blank", protocol.ErrInvalidSession)
	}
	return nil
}

// parseFrameMsg reads a frame from a NATS message's headers and body,
// checking sizes before anything is decoded and the shape as
// protocol.ParseJSONLine does, so a frame that passes can go to the MAC.
// The body is kept as is: it is what the tag covers. A body over maxBody
// is protocol.ErrFrameTooLarge; every other refusal wraps
// protocol.ErrMalformedFrame, protocol.ErrInvalidSession,
// protocol.ErrWrongRole or protocol.ErrSequence.
func parseFrameMsg(h nats.Header, body []byte, maxBody int) (protocol.Frame, error) {
	if len(body) > maxBody {
		return protocol.Frame{}, fmt.Errorf("%w: body of %d bytes, limit %d", protocol.ErrFrameTooLarge, len(body), maxBody)
	}
	session, err := oneHeader(h, HeaderSession, protocol.MaxSessionIDBytes)
	if err != nil {
		return protocol.Frame{}, err
	}
	roleName, err := oneHeader(h, HeaderRole, len("worker"))
	if err != nil {
		return protocol.Frame{}, err
	}
	role, err := protocol.ParseSessionRole(roleName)
	if err != nil {
		return protocol.Frame{}, err
	}
	seqText, err := oneHeader(h, HeaderSeq, maxSeqDigits)
	if err != nil {
		return protocol.Frame{}, err
	}
	seq, err := strconv.ParseUint(seqText, 10, 64)
	if err != nil || seqText[0] == '0' {
		return protocol.Frame{}, fmt.Errorf("%w: %s %q is not a sequence", protocol.ErrMalformedFrame, HeaderSeq, seqText)
	}
	tag, err := oneHeader(h, HeaderTag, 2*protocol.AuthTagBytes)
	if err != nil {
		return protocol.Frame{}, err
	}
	f := protocol.Frame{SessionID: session, Role: role, Sequence: seq, Message: body, Tag: tag}
	if err := f.CheckShape(); err != nil {
		return protocol.Frame{}, err
	}
	return f, nil
}

// frameKeyID returns the key id a frame names, or "" when it names none.
func frameKeyID(h nats.Header) (string, error) {
	v := h[HeaderKey]
	switch {
	case len(v) == 0:
		return "", nil
	case len(v) > 1:
		return "", fmt.Errorf("%w: %d values of %s, want 1", protocol.ErrMalformedFrame, len(v), HeaderKey)
	}
	if err := protocol.ValidateKeyID(v[0]); err != nil {
		return "", fmt.Errorf("%w: %s: %v", protocol.ErrMalformedFrame, HeaderKey, err)
	}
	return v[0], nil
}

// oneHeader returns the single value of key, refusing a missing, repeated
// or over-long one before it is looked at further.
func oneHeader(h nats.Header, key string, max int) (string, error) {
	v := h[key]
	switch {
	case len(v) != 1:
		return "", fmt.Errorf("%w: %d values of %s, want 1", protocol.ErrMalformedFrame, len(v), key)
	case len(v[0]) > max:
		return "", fmt.Errorf("%w: %s of %d bytes, limit %d", protocol.ErrMalformedFrame, key, len(v[0]), max)
	case v[0] == "":
		return "", fmt.Errorf("%w: empty %s", protocol.ErrMalformedFrame, key)
	}
	return v[0], nil
}
