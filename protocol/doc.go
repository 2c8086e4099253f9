// Package protocol is the authenticated wire format between a Splash host
// and its workers: the messages they exchange, how a message is sealed into
// a Frame with an HMAC-SHA256 tag, and how a Frame travels as one line of
// JSON. It does no I/O and knows nothing of NATS; the fabric and the worker
// agent move the lines.
//
// # Keys and roles
//
// Both ends share a SessionKey of exactly AuthTagBytes bytes, provisioned
// out of band (ParseSessionKey reads the hex or base64 form of a key file or
// environment variable). The protocol is not a key exchange and does not
// encrypt: it proves which end wrote a frame and that nobody changed it.
// Every frame names its sender's SessionRole, host or worker, and the role is
// covered by the tag, so a frame reflected back to its sender is refused.
//
// # Key rings
//
// A key changes over a fabric's life. A KeyRing holds the current key,
// which seals, and keys that only verify: at most one staged next key and
// the retired ones (ParseKeyRing reads a ring file; FileText writes one).
// Everything that seals or verifies takes Keys, which a KeyRing and a
// single SessionKey (a ring of one, its id derived by KeyIDOf) both
// satisfy. The protocol itself seals with one key; a transport that keeps
// a ring names the sealing key beside each frame so the receiver verifies
// with that key alone (package fabric's Splash-Key header).
//
// # Messages
//
// A WorkerMessage carries exactly one payload, named by its Kind: the host
// sends Invoke, Cancel and OperationReconcileRequest; the worker sends
// Chunk, Result, CancelReply and OperationReconcileResult. Build them with
// InvokeMessage, ResultMessage and the other constructors, and an
// OperationReconcileResult with NewOperationReconcileResult, which refuses
// an inconsistent status. Validate states every rule; sealing checks it
// before a sequence number is spent and opening checks it after the tag.
//
// # One ordered session: SessionAuthenticator
//
// For one conversation over an ordered channel (a pipe to a subprocess, one
// reconciliation exchange), each end holds a SessionAuthenticator:
//
//	host, _ := protocol.NewSessionAuthenticator("worker-1", key, protocol.RoleHost)
//	frame, err := host.Seal(protocol.ReconcileMessage(req)) // seq 1, 2, ...
//	line, err := frame.ToJSONLine()
//	// ... the worker end:
//	frame, err := protocol.ParseJSONLine(line)
//	msg, err := worker.Open(frame)
//
// Each direction numbers its frames from 1, and Open accepts only the next
// one: a replayed, skipped or reordered frame is ErrSequence. Open and Seal
// either succeed or leave the authenticator exactly as it was, so a hostile
// frame costs the session nothing.
//
// # Many interleaved requests: Signer
//
// The NATS fabric sees frames of many requests, redelivered and out of
// order, and keeps its own replay window per request. It uses Signer (or
// the one-shot SealFrame and VerifyFrame), which checks shape, tag and
// message but leaves ordering to the caller. A Signer reuses its HMAC state,
// so it is one per goroutine.
//
// # Canonical encoding
//
// The tag is HMAC-SHA256, under the session key, of
//
//	"splash-frame-v1\x00" || u32be(len(session_id)) || session_id ||
//	role (1 host, 2 worker) || u64be(seq) || u32be(len(msg)) || msg
//
// where msg is the exact bytes of Frame.Message. A frame is written as
//
//	{"session_id":"...","role":"host","seq":1,"msg":{...},"tag":"<64 lowercase hex>"}
//
// followed by a newline: the form stdio tools speak. (Over NATS, package
// fabric carries session, role, sequence and tag in headers and msg as the
// body.) Because the tag covers msg byte for byte,
// ToJSONLine and ParseJSONLine keep it verbatim; re-encoding a Frame with
// encoding/json may not. ParseJSONLine refuses lines over
// DefaultMaxFrameBytes (ErrFrameTooLarge) before it parses them, and
// anything that is not exactly one frame (ErrMalformedFrame): unknown or
// missing fields, trailing data, a newline inside the line. Frames, and the
// messages inside them, are read and written with encoding/json (the
// message strictly: unknown fields are refused); only the line's layout
// around the verbatim message is spelled by hand.
//
// # Errors
//
// Every rejection wraps a sentinel of errors.go (an illegal tool name inside a
// message wraps both ErrInvalidMessage and ErrInvalidToolName); match with
// errors.Is. A
// receiver should fail closed on any error from Open or Verify.
package protocol
