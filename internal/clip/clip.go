// Package clip bounds how much of an untrusted value a message repeats.
//
// Errors, logs and audit events quote what a caller, a script, a tool or a
// stored record supplied, so that a reader can recognise it; they must not
// carry the 100 KB a hostile one may hold, nor a cut halfway into a UTF-8
// sequence. Every package clips the same way, so a cut value looks the same
// wherever it is read: its first bytes, then "…" and its whole length.
package clip

import (
	"strconv"
	"unicode/utf8"
)

// Echo is how many bytes of a supplied value an error repeats: enough to
// recognise an id, a name or a path, never enough to carry a payload.
const Echo = 64

// String returns s when it has at most n bytes; otherwise its first n bytes
// or fewer (never inside a UTF-8 sequence) followed by "…(L bytes)", L
// being s's length.
func String[S ~string](v S, n int) string {
	s := string(v)
	if len(s) <= n {
		return s
	}
	return s[:cut(s, n)] + mark(len(s))
}

// Quote is String with the kept part quoted as strconv.Quote does, the mark
// outside the quotes: for values a message shows between quotes.
func Quote[S ~string](v S, n int) string {
	s := string(v)
	if len(s) <= n {
		return strconv.Quote(s)
	}
	return strconv.Quote(s[:cut(s, n)]) + mark(len(s))
}

// Bytes is String for a value held as bytes (a frame, a record).
func Bytes(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:cutBytes(b, n)]) + mark(len(b))
}

// QuoteBytes is Quote for a value held as bytes.
func QuoteBytes(b []byte, n int) string {
	if len(b) <= n {
		return strconv.Quote(string(b))
	}
	return strconv.Quote(string(b[:cutBytes(b, n)])) + mark(len(b))
}

func mark(n int) string { return "…(" + strconv.Itoa(n) + " bytes)" }

// cut is the largest length at most n that ends s between runes. A
// sequence that is not UTF-8 at all is cut at n: it has no runes to keep
// whole, and looking back further than utf8.UTFMax would only lose bytes.
func cut(s string, n int) int {
	for i := n; i >= 0 && i > n-utf8.UTFMax; i-- {
		if i == 0 || utf8.RuneStart(s[i]) {
			return i
		}
	}
	return n
}

func cutBytes(b []byte, n int) int {
	for i := n; i >= 0 && i > n-utf8.UTFMax; i-- {
		if i == 0 || utf8.RuneStart(b[i]) {
			return i
		}
	}
	return n
}
