package splashtool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/splashfabric/splashfabric/protocol"
)

// The environment the worker starts a tool process with
// (docs/process-tools.md).
const (
	EnvKeyFD   = "SPLASH_TOOL_KEY_FD"
	EnvSession = "SPLASH_TOOL_SESSION"
	EnvName    = "SPLASH_TOOL_NAME"
)

// Option configures Serve and ServeConn.
type Option func(*options)

type options struct {
	cancellable bool
}

// Cancellable says whether the tool's handlers stop when asked. With true,
// a cancel cancels the handler's context with cause ErrCancelled and the
// handler's answer decides the disposition; with false (the default) a
// cancel is answered unsupported at once and the call runs on. Either way
// the worker stops the process of a call that has not ended within its
// cancel grace (10s unless the catalog's cancel_grace says).
func Cancellable(on bool) Option { return func(o *options) { o.cancellable = on } }

// Serve runs a tool process: it reads the session key from the descriptor
// named by SPLASH_TOOL_KEY_FD, closes it, and serves the session named by
// SPLASH_TOOL_SESSION over standard input and output until input ends.
//
// Standard output carries frames and nothing else, so Serve points
// os.Stdout at standard error: a stray fmt.Println from a handler ends up in
// the worker's log instead of breaking the session.
//
// An error means the session failed closed (a bad frame, a write that
// failed) or the environment is wrong; exit non-zero on it.
func Serve(h Handler, opts ...Option) error {
	sessionID, key, err := FromEnv()
	if err != nil {
		return err
	}
	out := os.Stdout
	os.Stdout = os.Stderr
	return ServeConn(context.Background(), os.Stdin, out, sessionID, key, h, opts...)
}

// FromEnv reads the session id and the session key a tool process is
// started with. The key descriptor is read to its end and closed, so it is
// consumed by the first call. Serve calls it; it is exported for tools that
// call ServeConn themselves.
func FromEnv() (sessionID string, key protocol.SessionKey, err error) {
	sessionID = os.Getenv(EnvSession)
	if sessionID == "" {
		return "", protocol.SessionKey{}, fmt.Errorf("%w: %s is not set", ErrEnvironment, EnvSession)
	}
	fd, err := strconv.Atoi(os.Getenv(EnvKeyFD))
	if err != nil || fd < 0 {
		return "", protocol.SessionKey{}, fmt.Errorf("%w: %s=%q is not a descriptor", ErrEnvironment, EnvKeyFD, os.Getenv(EnvKeyFD))
	}
	f := os.NewFile(uintptr(fd), "splash-tool-key")
	if f == nil {
		return "", protocol.SessionKey{}, fmt.Errorf("%w: descriptor %d is not open", ErrEnvironment, fd)
	}
	key, err = readKey(f)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("%w: closing the key descriptor: %v", ErrEnvironment, cerr)
	}
	return sessionID, key, err
}

// readKey accepts exactly 64 lowercase hex digits and one newline: the one
// spelling the worker writes. The error never echoes what it read.
func readKey(r io.Reader) (protocol.SessionKey, error) {
	const want = 2*protocol.AuthTagBytes + 1
	b, err := io.ReadAll(io.LimitReader(r, want+1))
	if err != nil {
		return protocol.SessionKey{}, fmt.Errorf("%w: reading the key: %v", ErrEnvironment, err)
	}
	s, ok := strings.CutSuffix(string(b), "\n")
	if !ok || len(b) != want || strings.ToLower(s) != s {
		return protocol.SessionKey{}, fmt.Errorf("%w: %w: the key descriptor held %d bytes, want 64 lowercase hex digits and a newline",
			ErrEnvironment, protocol.ErrInvalidKey, len(b))
	}
	key, err := protocol.ParseSessionKey(s)
	if err != nil {
		return protocol.SessionKey{}, fmt.Errorf("%w: %w", ErrEnvironment, err)
	}
	return key, nil
}

// ServeConn serves one tool session: it reads the host's frames from in and
// writes the tool's to out, running each invoke's handler on its own
// goroutine. It is Serve without the process environment, for tests and for
// embedding.
//
// It returns nil once in ends and every running handler has returned (their
// answers are written). On a frame that does not parse, authenticate or
// belong to the session it fails closed: it writes nothing more, cancels
// every handler's context and returns, once they have returned, an error
// wrapping the protocol sentinel (or ErrUnexpectedMessage). A failed write
// to out is returned the same way once in ends.
//
// Cancelling ctx cancels every handler's context; it does not interrupt a
// read of in, so close in to make ServeConn return.
func ServeConn(ctx context.Context, in io.Reader, out io.Writer, sessionID string, key protocol.SessionKey,
	h Handler, opts ...Option) error {
	if h == nil {
		return errors.New("splashtool: nil handler")
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	// Two authenticators for the one session, one per direction: the read
	// loop opens without taking the lock that writers hold while sealing.
	opener, err := protocol.NewSessionAuthenticator(sessionID, key, protocol.RoleWorker)
	if err != nil {
		return err
	}
	sealer, err := protocol.NewSessionAuthenticator(sessionID, key, protocol.RoleWorker)
	if err != nil {
		return err
	}
	s := &session{h: h, cancellable: o.cancellable, w: out, opener: opener, sealer: sealer, calls: map[string]*Call{}}
	err = s.read(ctx, in)
	if err != nil {
		s.mu.Lock()
		s.closeLocked(err)
		s.mu.Unlock()
	}
	s.wg.Wait()
	if err == nil {
		s.mu.Lock()
		err = s.closed
		s.mu.Unlock()
	}
	return err
}
