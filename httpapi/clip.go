package httpapi

import (
	"strconv"
	"unicode/utf8"
)

// maxEchoBytes bounds what an error message repeats of a client-supplied
// string (an id, a path, a field name): enough to recognise it, never the
// 100 KB a client may send.
const maxEchoBytes = 64

// maxMessageBytes bounds a whole error message, whatever a sentinel's
// wrapper put into it.
const maxMessageBytes = 1 << 10

// quoteClip quotes s for an error message, cut to maxEchoBytes (between
// runes) with an ellipsis and s's length when it is longer.
func quoteClip(s string) string {
	return clipTo(s, maxEchoBytes, true)
}

// clipTo returns s (quoted if quote) cut to limit bytes between runes,
// followed by "…(N bytes)" when cut.
func clipTo(s string, limit int, quote bool) string {
	if len(s) <= limit {
		if quote {
			return strconv.Quote(s)
		}
		return s
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	head := s[:cut]
	if quote {
		head = strconv.Quote(head)
	}
	return head + "…(" + strconv.Itoa(len(s)) + " bytes)"
}
