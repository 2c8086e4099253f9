package protocol

import "bytes"

// The fixed parts of a line, which ToJSONLine writes and parseExactLine
// expects.
const (
	linePrefix     = `{"session_id":`
	lineRoleHost   = `,"role":"host","seq":`
	lineRoleWorker = `,"role":"worker","seq":`
	lineMsg        = `,"msg":`
	lineTag        = `,"tag":"`
	lineEnd        = `"}`
)

// parseExactLine is the fast path of ParseJSONLineLimit: it reads a line
// spelled exactly as ToJSONLine writes it, and declines (ok false) any
// other spelling, which then goes to decodeStrict. Where it succeeds, it
// returns the Frame that decodeStrict would, so shape checks and errors are
// the same on both paths; FuzzParseLinePathsAgree checks that.
//
// The tag is the last field and has a fixed length, so the message is
// found from both ends and scanned once, by the lexer, to check that it is
// exactly one JSON object. Because a complete JSON value ends where its
// last byte is, the strict decoder would read the same bytes as msg.
func parseExactLine(line []byte) (f Frame, ok bool) {
	const tail = len(lineTag) + 2*AuthTagBytes + len(lineEnd)
	if !bytes.HasPrefix(line, []byte(linePrefix)) || len(line) < len(linePrefix)+tail {
		return Frame{}, false
	}
	l := lexer{data: line[:len(line)-tail], off: len(linePrefix)}
	session, ok := l.quoted()
	if !ok {
		return Frame{}, false
	}
	rest := l.data[l.off:]
	var role SessionRole
	switch {
	case bytes.HasPrefix(rest, []byte(lineRoleHost)):
		role, l.off = RoleHost, l.off+len(lineRoleHost)
	case bytes.HasPrefix(rest, []byte(lineRoleWorker)):
		role, l.off = RoleWorker, l.off+len(lineRoleWorker)
	default:
		return Frame{}, false
	}
	seq, ok := l.unsigned(64)
	if !ok || !bytes.HasPrefix(l.data[l.off:], []byte(lineMsg)) {
		return Frame{}, false
	}
	l.off += len(lineMsg)
	start := l.off
	if start >= len(l.data) || l.data[start] != '{' || !l.value(0) || l.off != len(l.data) {
		return Frame{}, false
	}
	msg := l.data[start:]

	end := line[len(l.data):]
	tag := end[len(lineTag) : len(end)-len(lineEnd)]
	if string(end[:len(lineTag)]) != lineTag || string(end[len(end)-len(lineEnd):]) != lineEnd ||
		!isLowerHex(tag, 2*AuthTagBytes) {
		return Frame{}, false
	}
	return Frame{
		SessionID: session,
		Role:      role,
		Sequence:  seq,
		Message:   append([]byte(nil), msg...),
		Tag:       string(tag),
	}, true
}
