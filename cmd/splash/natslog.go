package main

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"strings"

	"github.com/nats-io/nats-server/v2/server"

	natsconf "github.com/splashfabric/splashfabric/deploy/nats"
	"github.com/splashfabric/splashfabric/metrics"
)

// natsLogger sends the embedded server's log lines to slog, so a node logs
// in the same format as every other splash process.
type natsLogger struct {
	log *slog.Logger
	// violation, if set, hears of every permission violation the node
	// refuses a client: publish, subscribe or reply, the client's user
	// (a name, or an nkey's public key) and the subject.
	violation func(op, user, subject string)
	// fatal receives the first fatal message. The server reports some
	// startup failures (JetStream refusing a cluster without routes) only
	// by calling Fatalf and returning from Start without listening, so the
	// command must watch for it rather than wait for readiness in vain.
	fatal chan string
}

var _ server.Logger = natsLogger{}

func (l natsLogger) Noticef(format string, v ...any) { l.log.Info(fmt.Sprintf(format, v...)) }
func (l natsLogger) Warnf(format string, v ...any)   { l.log.Warn(fmt.Sprintf(format, v...)) }
func (l natsLogger) Errorf(format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	if l.violation != nil {
		if m := violationLine.FindStringSubmatch(msg); m != nil {
			op := metrics.NATSPublish
			switch {
			case m[2] == "Subscription":
				op = metrics.NATSSubscribe
			case m[3] == "Reply":
				op = metrics.NATSReply
			}
			l.violation(op, m[1], m[4])
		}
	}
	l.log.Error(msg)
}

// violationLine matches the line a node logs for a refused publish or
// subscription: the client's "account/user", then what it was refused.
var violationLine = regexp.MustCompile(`"[^"/]*/([^"]*)" - (Publish|Subscription) Violation - (Subject|Reply) "([^"]*)"`)

func (l natsLogger) Debugf(format string, v ...any) { l.log.Debug(fmt.Sprintf(format, v...)) }
func (l natsLogger) Tracef(format string, v ...any) { l.log.Debug(fmt.Sprintf(format, v...)) }

// Fatalf logs and reports the message on fatal instead of exiting: the
// command then shuts the server down and exits 1 itself, rather than the
// process being ended from inside a library goroutine.
func (l natsLogger) Fatalf(format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	l.log.Error(msg)
	select {
	case l.fatal <- msg:
	default:
	}
}

// attachNatsLogger installs a logger writing to l on srv, with debug lines
// on when l shows them, and returns the channel its fatal messages arrive
// on. violation, if set, hears of every permission violation (see
// natsLogger). Protocol tracing stays off: it logs every message's payload,
// which holds sealed frames.
func attachNatsLogger(srv *server.Server, l *slog.Logger, violation func(op, user, subject string)) <-chan string {
	debug := l.Enabled(context.Background(), slog.LevelDebug)
	nl := natsLogger{log: l, fatal: make(chan string, 1), violation: violation}
	srv.SetLoggerV2(nl, debug, false, false)
	return nl.fatal
}

// violationCounter counts a node's permission violations in m by the
// identity that committed them: host, ops, a pool's name (found by its
// nkey), or "other", so the label stays within the deployment's
// identities.
func violationCounter(m *metrics.NATS, pools []natsconf.Pool) func(op, user, subject string) {
	byKey := make(map[string]string, len(pools))
	for _, p := range pools {
		byKey[p.NKey] = p.Name
	}
	return func(op, user, _ string) {
		// A node names an nkey user "nkey:<public key>".
		user = strings.TrimPrefix(user, "nkey:")
		identity := metrics.Other
		switch {
		case user == natsconf.UserHost || user == natsconf.UserOps:
			identity = user
		case byKey[user] != "":
			identity = byKey[user]
		}
		m.Violation(op, identity)
	}
}
