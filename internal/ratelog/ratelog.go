// Package ratelog bounds how often one kind of log line is written, so
// that a flood of bad input (forged frames, garbage on an invocation
// subject) costs a counter increment per message and a log line per
// interval, not a line per message.
package ratelog

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Limiter writes at most Burst lines per key in any Every interval and
// folds the rest into a "suppressed" count carried by the next line it
// lets through. Keys are a closed set chosen by the caller (a rejection
// reason, say), never input from the wire: the map holds one entry per key
// for the life of the Limiter. A Limiter is safe for concurrent use.
type Limiter struct {
	log   *slog.Logger
	every time.Duration
	burst int

	mu   sync.Mutex
	keys map[string]*window
}

// window is one key's interval: when it began, the lines it wrote and the
// lines it dropped.
type window struct {
	start      time.Time
	written    int
	suppressed uint64
}

// New returns a Limiter writing to log at most burst lines per key in
// every interval. A burst below 1 means 1; an interval of zero or less
// means a second.
func New(log *slog.Logger, every time.Duration, burst int) *Limiter {
	if every <= 0 {
		every = time.Second
	}
	return &Limiter{log: log, every: every, burst: max(burst, 1), keys: make(map[string]*window)}
}

// Warn writes msg at warning level with args, unless key has used its
// lines for the current interval; then it only counts the line. The first
// line after a suppression says how many lines of key were dropped.
func (l *Limiter) Warn(key, msg string, args ...any) {
	l.write(slog.LevelWarn, key, msg, args)
}

// Info is Warn at info level.
func (l *Limiter) Info(key, msg string, args ...any) {
	l.write(slog.LevelInfo, key, msg, args)
}

func (l *Limiter) write(level slog.Level, key, msg string, args []any) {
	suppressed, ok := l.allow(key, time.Now())
	if !ok {
		return
	}
	if suppressed > 0 {
		args = append(args[:len(args):len(args)], "suppressed", suppressed)
	}
	l.log.Log(context.Background(), level, msg, args...)
}

// allow reports whether a line of key may be written at now, and how
// many lines of key were dropped since the last one written.
func (l *Limiter) allow(key string, now time.Time) (uint64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.keys[key]
	if w == nil {
		w = &window{start: now}
		l.keys[key] = w
	}
	if now.Sub(w.start) >= l.every {
		w.start, w.written = now, 0
	}
	if w.written >= l.burst {
		w.suppressed++
		return 0, false
	}
	w.written++
	s := w.suppressed
	w.suppressed = 0
	return s, true
}
