package apitoken

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// Verifier finds the token a bearer token stands for. *Set and *File are
// Verifiers.
type Verifier interface {
	// Lookup returns the token whose secret is bearer; false for one it
	// does not know.
	Lookup(bearer string) (*Token, bool)
}

// Digest is the SHA-256 of a bearer token: how a Set knows it.
type Digest [sha256.Size]byte

// DigestOf returns the digest of a bearer token.
func DigestOf(bearer string) Digest { return sha256.Sum256([]byte(bearer)) }

// ParseDigest reads a digest written as 64 hex digits.
func ParseDigest(s string) (Digest, error) {
	var d Digest
	if len(s) != hex.EncodedLen(len(d)) {
		return d, fmt.Errorf("%w: sha256 of %d characters, want 64 hex digits", ErrInvalidToken, len(s))
	}
	if _, err := hex.Decode(d[:], []byte(strings.ToLower(s))); err != nil {
		return d, fmt.Errorf("%w: sha256 is not hex: %v", ErrInvalidToken, err)
	}
	return d, nil
}

// String writes the digest as 64 lowercase hex digits.
func (d Digest) String() string { return hex.EncodeToString(d[:]) }

// Set is a fixed set of tokens, known by their digests. It never changes
// once built, so any goroutine may read it.
type Set struct {
	byDigest map[Digest]*Token
	names    []string
}

// Entry is one token of a Set: its digest and what it may do.
type Entry struct {
	Digest Digest
	Token  *Token
}

// NewSet builds a set from entries. Two entries with one name or one
// digest are refused: a name owns sessions, and a digest must say which
// token it is.
func NewSet(entries []Entry) (*Set, error) {
	s := &Set{byDigest: make(map[Digest]*Token, len(entries))}
	seen := make(map[string]bool, len(entries))
	for _, e := range entries {
		name := e.Token.Name()
		switch {
		case seen[name]:
			return nil, fmt.Errorf("%w: two tokens named %q", ErrInvalidToken, name)
		case s.byDigest[e.Digest] != nil:
			return nil, fmt.Errorf("%w: tokens %q and %q have one digest", ErrInvalidToken, s.byDigest[e.Digest].Name(), name)
		}
		seen[name] = true
		s.byDigest[e.Digest] = e.Token
		s.names = append(s.names, name)
	}
	return s, nil
}

// Single returns the set of one token, secret, that holds every scope and
// every tool: splash dev's, or a host's given one token.
func Single(name, secret string) *Set {
	s, _ := NewSet([]Entry{{Digest: DigestOf(secret), Token: Root(name)}})
	return s
}

// Lookup implements Verifier. Tokens are found by the digest of bearer:
// what the set holds says nothing of the secrets, and the time a lookup
// takes depends on the digest of what the client sent, not on how much
// of a secret it guessed.
func (s *Set) Lookup(bearer string) (*Token, bool) {
	if s == nil || bearer == "" {
		return nil, false
	}
	t, ok := s.byDigest[DigestOf(bearer)]
	return t, ok
}

// Names lists the tokens' names in the order they were given.
func (s *Set) Names() []string { return append([]string(nil), s.names...) }

// Len is how many tokens the set holds.
func (s *Set) Len() int { return len(s.names) }
