package fabric

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sync"

	"github.com/nats-io/nats.go"
)

// A NATS server refuses a publish or a subscription its user may not make
// by telling the client asynchronously; the publish itself is dropped in
// silence. A request (a JetStream API call, a KV put) then waits for an
// answer that never comes and fails only at its timeout, as "context
// deadline exceeded". PermissionWatch turns the server's word into a typed
// error that names the user and the subject, reports it as it happens, and
// ends at once the operations guarded against it.

// ErrPermissionDenied is what every PermissionError matches with
// errors.Is.
var ErrPermissionDenied = errors.New("permission denied")

// PermissionError is the server's refusal of one publish or subscription.
type PermissionError struct {
	// User is the identity the connection authenticated as (a user name,
	// or a pool's identity).
	User string
	// Op is "publish", "subscribe" or "reply" (a publish whose reply
	// subject the user may not receive on).
	Op string
	// Subject is the subject refused.
	Subject string
}

func (e *PermissionError) Error() string {
	what := e.Op + " to"
	switch e.Op {
	case "subscribe":
		what = "subscribe to"
	case "reply":
		what = "publish with the reply subject"
	}
	return fmt.Sprintf("permission denied: NATS user %s may not %s %q", e.User, what, e.Subject)
}

// Is matches ErrPermissionDenied.
func (e *PermissionError) Is(target error) bool { return target == ErrPermissionDenied }

var (
	violationPublish   = regexp.MustCompile(`Permissions Violation for Publish to "([^"]*)"`)
	violationReply     = regexp.MustCompile(`Permissions Violation for Publish with Reply of "([^"]*)"`)
	violationSubscribe = regexp.MustCompile(`Permissions Violation for Subscription to "([^"]*)"`)
)

// AsPermissionError reads err, an asynchronous error a nats.Conn reported,
// as a permission violation of user; false for any other error.
func AsPermissionError(err error, user string) (*PermissionError, bool) {
	if err == nil || !errors.Is(err, nats.ErrPermissionViolation) {
		return nil, false
	}
	s := err.Error()
	for _, c := range []struct {
		op string
		re *regexp.Regexp
	}{{"reply", violationReply}, {"publish", violationPublish}, {"subscribe", violationSubscribe}} {
		if m := c.re.FindStringSubmatch(s); m != nil {
			return &PermissionError{User: user, Op: c.op, Subject: m[1]}, true
		}
	}
	return &PermissionError{User: user, Op: "publish", Subject: "?"}, true
}

// PermissionWatch is a connection's asynchronous error handler that knows
// permission violations. Pass Option to nats.Connect. Every violation is
// handed to the report function (to log and count it) and ends every
// context Guard returned that is still open, with the PermissionError as
// its cause. Other errors go to next, if set. It is safe for concurrent
// use.
type PermissionWatch struct {
	user   string
	report func(*PermissionError)
	next   nats.ErrHandler

	mu     sync.Mutex
	guards map[*permissionGuard]struct{}
}

type permissionGuard struct {
	cancel context.CancelCauseFunc
}

// NewPermissionWatch returns a watch for the connections of user; report,
// if set, hears of every violation (on a client goroutine: it must not
// block), and next, if set, of every other asynchronous error.
func NewPermissionWatch(user string, report func(*PermissionError), next nats.ErrHandler) *PermissionWatch {
	return &PermissionWatch{user: user, report: report, next: next, guards: make(map[*permissionGuard]struct{})}
}

// Option installs the watch as the connection's error handler.
func (w *PermissionWatch) Option() nats.Option { return nats.ErrorHandler(w.handle) }

func (w *PermissionWatch) handle(nc *nats.Conn, sub *nats.Subscription, err error) {
	pe, ok := AsPermissionError(err, w.user)
	if !ok {
		if w.next != nil {
			w.next(nc, sub, err)
		}
		return
	}
	if w.report != nil {
		w.report(pe)
	}
	w.mu.Lock()
	for g := range w.guards {
		g.cancel(pe)
	}
	w.mu.Unlock()
}

// Guard returns a context that ends, with the PermissionError as its cause
// (context.Cause), as soon as the server refuses anything of the watched
// connection, so an operation that sent a refused publish fails at once
// instead of waiting out its timeout. The cancel function releases it.
func (w *PermissionWatch) Guard(ctx context.Context) (context.Context, context.CancelFunc) {
	gctx, cancel := context.WithCancelCause(ctx)
	g := &permissionGuard{cancel: cancel}
	w.mu.Lock()
	w.guards[g] = struct{}{}
	w.mu.Unlock()
	return gctx, func() {
		w.mu.Lock()
		delete(w.guards, g)
		w.mu.Unlock()
		cancel(context.Canceled)
	}
}

// Denied returns the PermissionError that ended ctx (a context Guard
// returned), or err unchanged: an operation that failed because its
// context ended reports the refusal instead of "context canceled".
func Denied(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	var pe *PermissionError
	if cause := context.Cause(ctx); errors.As(cause, &pe) {
		return pe
	}
	return err
}
