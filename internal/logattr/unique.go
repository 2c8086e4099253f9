// Package logattr keeps a log record's attributes unique by key.
//
// Loggers are handed down: a command names its component and worker, the
// worker agent adds the worker and the tool, the tool's supervisor adds the
// tool again because it is also used alone. slog passes every With on to
// the output, so the same key would be written two or three times (JSON
// readers then keep one of them, which one depends on the reader). Unique
// drops a repeat instead: the first value of a key at a level wins, which
// is the one the outermost owner set.
package logattr

import (
	"context"
	"log/slog"
	"maps"
	"slices"
)

// Unique wraps h so that no record it writes carries a key twice at the
// same level (the top level, or one group).
func Unique(h slog.Handler) slog.Handler {
	return &unique{inner: h, seen: map[string]bool{}}
}

type unique struct {
	inner slog.Handler
	// seen are the keys already given at the current level: by With
	// calls since the last group was opened.
	seen map[string]bool
}

func (u *unique) Enabled(ctx context.Context, l slog.Level) bool {
	return u.inner.Enabled(ctx, l)
}

func (u *unique) WithAttrs(as []slog.Attr) slog.Handler {
	seen := maps.Clone(u.seen)
	kept := keep(as, seen)
	if len(kept) == 0 {
		return &unique{inner: u.inner, seen: seen}
	}
	return &unique{inner: u.inner.WithAttrs(kept), seen: seen}
}

func (u *unique) WithGroup(name string) slog.Handler {
	if name == "" {
		return u
	}
	// What follows is inside the group: a key of the level outside it
	// is another attribute there.
	return &unique{inner: u.inner.WithGroup(name), seen: map[string]bool{}}
}

func (u *unique) Handle(ctx context.Context, r slog.Record) error {
	// Most records are clean: look before copying anything.
	var buf [16]string
	keys, dup := buf[:0], false
	r.Attrs(func(a slog.Attr) bool {
		if u.seen[a.Key] || slices.Contains(keys, a.Key) {
			dup = true
			return false
		}
		if a.Key != "" {
			keys = append(keys, a.Key)
		}
		return true
	})
	if !dup {
		return u.inner.Handle(ctx, r)
	}
	as := make([]slog.Attr, 0, r.NumAttrs())
	r.Attrs(func(a slog.Attr) bool {
		as = append(as, a)
		return true
	})
	seen := maps.Clone(u.seen)
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	out.AddAttrs(keep(as, seen)...)
	return u.inner.Handle(ctx, out)
}

// keep returns the attributes of as whose keys are not in seen, the first
// of each, and adds their keys to seen. An attribute with an empty key is
// kept: slog inlines a group without a key, and drops any other.
func keep(as []slog.Attr, seen map[string]bool) []slog.Attr {
	out := as[:0:0]
	for _, a := range as {
		switch {
		case a.Key == "":
		case seen[a.Key]:
			continue
		default:
			seen[a.Key] = true
		}
		out = append(out, a)
	}
	return out
}
