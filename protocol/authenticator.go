package protocol

import (
	"fmt"
	"math"

	"github.com/splashfabric/splashfabric/internal/clip"
)

// SessionAuthenticator is one end of a strictly ordered, authenticated
// session: the host end or the worker end. Each direction has its own
// sequence, starting at 1; Seal numbers outbound frames and Open accepts
// only the peer's next frame, so a replayed, dropped or reordered frame is
// refused rather than quietly tolerated.
//
// Open and Seal either succeed or leave the authenticator exactly as it was,
// so a hostile frame costs the session nothing but the attempt. It is not
// safe for concurrent use: a session is one conversation, owned by one
// goroutine.
type SessionAuthenticator struct {
	sessionID string
	role      SessionRole
	signer    *Signer
	lastSent  uint64 // sequence of the last frame Seal produced
	lastOpen  uint64 // sequence of the last frame Open accepted
}

// NewSessionAuthenticator starts a session as role. The session id must be
// non-empty UTF-8 (ErrInvalidSession), the key constructed
// (ErrInvalidKey), the role host or worker (ErrWrongRole).
func NewSessionAuthenticator(sessionID string, key SessionKey, role SessionRole) (*SessionAuthenticator, error) {
	if err := validateSessionID(sessionID); err != nil {
		return nil, err
	}
	if err := key.check(); err != nil {
		return nil, err
	}
	if err := role.Validate(); err != nil {
		return nil, err
	}
	return &SessionAuthenticator{sessionID: sessionID, role: role, signer: NewSigner(key)}, nil
}

// SessionID returns the session this authenticator is bound to.
func (a *SessionAuthenticator) SessionID() string { return a.sessionID }

// Role returns the role this end seals as.
func (a *SessionAuthenticator) Role() SessionRole { return a.role }

// Sequences returns the sequence of the last frame sealed and of the last
// frame opened; both are zero for a new session.
func (a *SessionAuthenticator) Sequences() (sent, opened uint64) { return a.lastSent, a.lastOpen }

// Seal validates msg and seals it as this end's next frame. An invalid
// message (ErrInvalidMessage) does not consume a sequence number.
func (a *SessionAuthenticator) Seal(msg WorkerMessage) (Frame, error) {
	if a.lastSent == math.MaxUint64 {
		return Frame{}, fmt.Errorf("%w: outbound sequence exhausted", ErrSequence)
	}
	f, err := a.signer.Seal(a.sessionID, a.role, a.lastSent+1, msg)
	if err != nil {
		return Frame{}, err
	}
	a.lastSent++
	return f, nil
}

// Open accepts the peer's next frame and returns its message. In order, it
// refuses a frame of another session (ErrInvalidSession), one not sealed by
// the peer role, including this end's own frames reflected back
// (ErrWrongRole), a frame whose tag does not verify (ErrBadTag), a sequence
// other than the last opened plus one (ErrSequence), and a message that does
// not validate (ErrInvalidMessage). The tag is checked before the sequence,
// so an unauthenticated frame learns nothing about the session's position.
func (a *SessionAuthenticator) Open(f Frame) (WorkerMessage, error) {
	if f.SessionID != a.sessionID {
		return WorkerMessage{}, fmt.Errorf("%w: frame for session %q, this is %q",
			ErrInvalidSession, clip.String(f.SessionID, clip.Echo), a.sessionID)
	}
	if f.Role == a.role {
		return WorkerMessage{}, fmt.Errorf("%w: frame sealed by this end's own role %s", ErrWrongRole, f.Role)
	}
	if f.Role != a.role.Peer() {
		return WorkerMessage{}, fmt.Errorf("%w: frame role %s, want %s", ErrWrongRole, f.Role, a.role.Peer())
	}
	if err := a.signer.checkTag(f); err != nil {
		return WorkerMessage{}, err
	}
	if want := a.lastOpen + 1; f.Sequence != want {
		what := "skipped to"
		if f.Sequence < want {
			what = "replayed"
		}
		return WorkerMessage{}, fmt.Errorf("%w: %s seq %d, want %d", ErrSequence, what, f.Sequence, want)
	}
	m, err := decodeMessage(f.Message)
	if err != nil {
		return WorkerMessage{}, err
	}
	a.lastOpen++
	return m, nil
}
