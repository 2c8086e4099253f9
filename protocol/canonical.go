package protocol

import "encoding/binary"

// canonicalDomain separates this MAC from any other use of the same key;
// the version lets a future encoding coexist without tags that verify under
// both.
const canonicalDomain = "splash-frame-v1\x00"

// appendCanonicalHeader appends everything the tag covers except the message
// bytes themselves:
//
//	"splash-frame-v1\x00" || u32be(len(sessionID)) || sessionID ||
//	role byte || u64be(seq) || u32be(len(msg))
//
// The message follows directly. Every variable-length field is
// length-prefixed, so no two distinct frames share a MAC input. The caller
// writes msg to the hash itself, which spares copying it into the buffer.
func appendCanonicalHeader(b []byte, sessionID string, role SessionRole, seq uint64, msgLen int) []byte {
	b = append(b, canonicalDomain...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(sessionID)))
	b = append(b, sessionID...)
	b = append(b, byte(role))
	b = binary.BigEndian.AppendUint64(b, seq)
	return binary.BigEndian.AppendUint32(b, uint32(msgLen))
}
