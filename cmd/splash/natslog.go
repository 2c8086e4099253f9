package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/nats-io/nats-server/v2/server"
)

// natsLogger sends the embedded server's log lines to slog, so a node logs
// in the same format as every other splash process.
type natsLogger struct {
	log *slog.Logger
	// fatal receives the first fatal message. The server reports some
	// startup failures (JetStream refusing a cluster without routes) only
	// by calling Fatalf and returning from Start without listening, so the
	// command must watch for it rather than wait for readiness in vain.
	fatal chan string
}

var _ server.Logger = natsLogger{}

func (l natsLogger) Noticef(format string, v ...any) { l.log.Info(fmt.Sprintf(format, v...)) }
func (l natsLogger) Warnf(format string, v ...any)   { l.log.Warn(fmt.Sprintf(format, v...)) }
func (l natsLogger) Errorf(format string, v ...any)  { l.log.Error(fmt.Sprintf(format, v...)) }
func (l natsLogger) Debugf(format string, v ...any)  { l.log.Debug(fmt.Sprintf(format, v...)) }
func (l natsLogger) Tracef(format string, v ...any)  { l.log.Debug(fmt.Sprintf(format, v...)) }

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
// on. Protocol tracing stays off: it logs every message's payload, which
// holds sealed frames.
func attachNatsLogger(srv *server.Server, l *slog.Logger) <-chan string {
	debug := l.Enabled(context.Background(), slog.LevelDebug)
	nl := natsLogger{log: l, fatal: make(chan string, 1)}
	srv.SetLoggerV2(nl, debug, false, false)
	return nl.fatal
}
