package hostloop

import (
	"fmt"
	"unicode/utf8"

	"github.com/splashfabric/splashfabric/host"
)

// DefaultMaxValueBytes bounds a finished session's value and error text,
// measured as a JSON string, when LoopConfig.MaxValueBytes is zero. A
// finished session is held in memory (up to KeepFinished of them), sent
// on every GET and event stream, and stored by the archive, whose records
// hold 64 KiB: 60 KiB leaves the rest of a record (id, state, times) room,
// so what the loop keeps is what the archive stores, byte for byte.
const DefaultMaxValueBytes = 60 << 10

// truncatedMark ends an error text cut to fit, as the archive marks one.
const truncatedMark = " [truncated]"

// keep records r as s's result, bounding a final one (see boundResult)
// before anything reports or stores it.
func (s *session) keep(r *host.EvalResult, limit int) {
	if !r.Suspended {
		r, s.truncated = boundResult(r, limit)
	}
	s.result = r
}

// boundResult returns r with its value and error within limit, measured as
// JSON string text, and whether it cut the error. A value over limit fails the session with
// ErrValueTooLarge: a cut value (JSON text, most often) would no longer
// parse, and a client that missed the mark would read a wrong result. An
// error's text is prose for people, so it is cut and marked; the cut error
// keeps what errors.Is and errors.As matched. It runs once per session, as
// the session finishes; the large original is garbage after it.
func boundResult(r *host.EvalResult, limit int) (*host.EvalResult, bool) {
	if r.Err == nil {
		if !jsonFits(r.Value, limit) {
			cause := fmt.Errorf("%w: the script's value (%d bytes of text) takes more than %d bytes as JSON text, the most a session keeps; return a smaller value, or store it with a tool and return a reference",
				ErrValueTooLarge, len(r.Value), limit)
			return &host.EvalResult{Err: cause}, false
		}
		return r, false
	}
	se, ok := r.Err.(*host.ScriptError)
	if !ok || jsonFits(se.Error(), limit) {
		// Only the script's own failures carry its text; a host
		// failure is short, and kept whole with what it matches.
		return r, false
	}
	// Error() is a fixed prefix and Message. The stack is dropped from
	// a cut error: it would not fit either.
	cut := *se
	cut.Message = JSONPrefix(se.Message, limit-len(truncatedMark)-len(se.Error())+len(se.Message)) + truncatedMark
	cut.Stack = ""
	out := *r
	out.Err = &cut
	return &out, true
}

// jsonFits reports whether s, encoded as a JSON string body by
// encoding/json, takes at most limit bytes. It stops at the limit, so
// measuring a 50 MB value costs no more than measuring a 60 KiB one.
func jsonFits(s string, limit int) bool {
	// JSON never takes fewer bytes than the text it encodes.
	return len(s) <= limit && len(JSONPrefix(s, limit)) == len(s)
}

// JSONPrefix returns the longest prefix of s, cut between runes, whose
// encoding as a JSON string body takes at most budget bytes. It is the
// measure the loop bounds session values by, and the one a session archive
// cuts its records by, so the two never disagree on what fits.
func JSONPrefix(s string, budget int) string {
	used := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		used += jsonCost(r, size)
		if used > budget {
			return s[:i]
		}
		i += size
	}
	return s
}

// jsonCost bounds from above what encoding/json writes for one rune of
// size bytes: control characters, HTML-sensitive characters, the JSON
// line separators and invalid bytes become \uXXXX escapes.
func jsonCost(r rune, size int) int {
	switch {
	case r == utf8.RuneError && size == 1, r < 0x20, r == '<', r == '>', r == '&', r == '\u2028', r == '\u2029':
		return 6
	case r == '"', r == '\\':
		return 2
	}
	return size
}
