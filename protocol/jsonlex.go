package protocol

import (
	"encoding/json"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// maxLexDepth bounds how deeply lexer.value nests before it declines.
// encoding/json allows 10000 levels; declining earlier only sends the rare
// deep value to encoding/json, and keeps the recursion shallow.
const maxLexDepth = 512

// lexer reads JSON for the fast paths of frame and message decoding. Its
// rule is to decline: every method returns false at anything it is not
// certain to read exactly as encoding/json would (escapes it does not
// handle, invalid UTF-8 that encoding/json would silently replace, numbers
// outside the target type, very deep nesting), and the caller then hands
// the whole input to encoding/json. A false is therefore never a verdict on
// the input, only a refusal to judge it, which keeps every acceptance and
// every error exactly where encoding/json puts them.
type lexer struct {
	data []byte
	off  int
}

func (l *lexer) skipSpace() {
	for l.off < len(l.data) {
		switch l.data[l.off] {
		case ' ', '\t', '\n', '\r':
			l.off++
		default:
			return
		}
	}
}

// eat consumes c after optional whitespace.
func (l *lexer) eat(c byte) bool {
	l.skipSpace()
	if l.off < len(l.data) && l.data[l.off] == c {
		l.off++
		return true
	}
	return false
}

// atEnd reports whether only whitespace is left, as encoding/json requires
// after a top-level value.
func (l *lexer) atEnd() bool {
	l.skipSpace()
	return l.off == len(l.data)
}

// object reads an object and calls member with each key, positioned at the
// key's value, which member must consume. Keys must be spelled without
// escapes: encoding/json matches a field name case-insensitively after
// unescaping, so an escaped key is left to it, and member declines any key
// that is not exactly a field name for the same reason.
func (l *lexer) object(member func(key []byte) bool) bool {
	if !l.eat('{') {
		return false
	}
	if l.eat('}') {
		return true
	}
	for {
		key, ok := l.plainKey()
		if !ok || !l.eat(':') || !member(key) {
			return false
		}
		if l.eat(',') {
			continue
		}
		return l.eat('}')
	}
}

// plainKey reads an ASCII string with no escapes and returns its bytes in
// place.
func (l *lexer) plainKey() ([]byte, bool) {
	if !l.eat('"') {
		return nil, false
	}
	start := l.off
	for i := start; i < len(l.data); i++ {
		switch c := l.data[i]; {
		case c == '"':
			l.off = i + 1
			return l.data[start:i], true
		case c == '\\' || c < 0x20 || c >= utf8.RuneSelf:
			return nil, false
		}
	}
	return nil, false
}

// quoted decodes a JSON string. Invalid UTF-8 and unpaired surrogates
// decline, since encoding/json turns them into U+FFFD.
func (l *lexer) quoted() (string, bool) {
	if !l.eat('"') {
		return "", false
	}
	start := l.off
	ascii := true
	for i := start; i < len(l.data); i++ {
		switch c := l.data[i]; {
		case c == '"':
			s := l.data[start:i]
			if !ascii && !utf8.Valid(s) {
				return "", false
			}
			l.off = i + 1
			return string(s), true
		case c == '\\':
			return l.escapedString(start, i)
		case c < 0x20:
			return "", false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return "", false
}

// escapedString finishes a string whose first escape is at esc. An escape
// never splits a UTF-8 sequence (both its bytes are ASCII), so checking
// each unescaped run on its own checks the whole string.
func (l *lexer) escapedString(start, esc int) (string, bool) {
	var b strings.Builder
	b.Grow(esc - start + 16)
	run := start
	for i := esc; i < len(l.data); {
		c := l.data[i]
		switch {
		case c == '"':
			if !utf8.Valid(l.data[run:i]) {
				return "", false
			}
			b.Write(l.data[run:i])
			l.off = i + 1
			return b.String(), true
		case c < 0x20:
			return "", false
		case c != '\\':
			i++
			continue
		}
		if !utf8.Valid(l.data[run:i]) || i+1 >= len(l.data) {
			return "", false
		}
		b.Write(l.data[run:i])
		switch e := l.data[i+1]; e {
		case '"', '\\', '/':
			b.WriteByte(e)
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			r, ok := l.hex4(i + 2)
			if !ok {
				return "", false
			}
			if utf16.IsSurrogate(r) {
				lo, ok := l.hex4(i + 8)
				if !ok || l.data[i+6] != '\\' || l.data[i+7] != 'u' {
					return "", false
				}
				if r = utf16.DecodeRune(r, lo); r == utf8.RuneError {
					return "", false
				}
				i += 6
			}
			b.WriteRune(r)
			i += 4
		default:
			return "", false
		}
		i += 2
		run = i
	}
	return "", false
}

// hex4 reads the four hex digits of a \u escape at i.
func (l *lexer) hex4(i int) (rune, bool) {
	if i+4 > len(l.data) {
		return 0, false
	}
	var r rune
	for _, c := range l.data[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// integer reads an integer literal. A fraction or exponent declines:
// encoding/json refuses them for integer fields anyway.
func (l *lexer) integer() (neg bool, mag uint64, ok bool) {
	l.skipSpace()
	d, i := l.data, l.off
	if i < len(d) && d[i] == '-' {
		neg = true
		i++
	}
	if i >= len(d) || !isDigit(d[i]) {
		return false, 0, false
	}
	if d[i] == '0' {
		i++
	} else {
		for ; i < len(d) && isDigit(d[i]); i++ {
			digit := uint64(d[i] - '0')
			if mag > (1<<64-1-digit)/10 {
				return false, 0, false
			}
			mag = mag*10 + digit
		}
	}
	if i < len(d) && (isDigit(d[i]) || d[i] == '.' || d[i] == 'e' || d[i] == 'E') {
		return false, 0, false
	}
	l.off = i
	return neg, mag, true
}

// unsigned reads an integer that fits in bits bits without sign.
func (l *lexer) unsigned(bits uint) (uint64, bool) {
	neg, mag, ok := l.integer()
	if !ok || neg || bits < 64 && mag >= 1<<bits {
		return 0, false
	}
	return mag, true
}

// signed reads an integer that fits in a signed bits-bit integer. "-0" is
// zero, as strconv.ParseInt has it.
func (l *lexer) signed(bits uint) (int64, bool) {
	neg, mag, ok := l.integer()
	limit := uint64(1) << (bits - 1)
	switch {
	case !ok:
		return 0, false
	case neg && mag <= limit:
		return -int64(mag-1) - 1, true
	case !neg && mag < limit:
		return int64(mag), true
	}
	return 0, false
}

// raw reads one JSON value and returns a copy of its bytes, without the
// whitespace around it, as encoding/json fills a json.RawMessage.
func (l *lexer) raw() (json.RawMessage, bool) {
	l.skipSpace()
	start := l.off
	if !l.value(0) {
		return nil, false
	}
	return append(json.RawMessage(nil), l.data[start:l.off]...), true
}

// value skips one JSON value, checking the grammar exactly as encoding/json's
// scanner does: it does not check UTF-8 inside strings either, since a
// json.RawMessage keeps the bytes as they are.
func (l *lexer) value(depth int) bool {
	l.skipSpace()
	if l.off >= len(l.data) {
		return false
	}
	switch c := l.data[l.off]; {
	case c == '{':
		if depth >= maxLexDepth {
			return false
		}
		l.off++
		if l.eat('}') {
			return true
		}
		for {
			l.skipSpace()
			if !l.skipString() || !l.eat(':') || !l.value(depth+1) {
				return false
			}
			if l.eat(',') {
				continue
			}
			return l.eat('}')
		}
	case c == '[':
		if depth >= maxLexDepth {
			return false
		}
		l.off++
		if l.eat(']') {
			return true
		}
		for {
			if !l.value(depth + 1) {
				return false
			}
			if l.eat(',') {
				continue
			}
			return l.eat(']')
		}
	case c == '"':
		return l.skipString()
	case c == '-' || isDigit(c):
		return l.skipNumber()
	case c == 't':
		return l.literal("true")
	case c == 'f':
		return l.literal("false")
	case c == 'n':
		return l.literal("null")
	}
	return false
}

func (l *lexer) literal(word string) bool {
	if string(l.data[l.off:min(len(l.data), l.off+len(word))]) != word {
		return false
	}
	l.off += len(word)
	return true
}

// skipString skips a string at l.off, checking its escapes.
func (l *lexer) skipString() bool {
	if l.off >= len(l.data) || l.data[l.off] != '"' {
		return false
	}
	for i := l.off + 1; i < len(l.data); i++ {
		switch c := l.data[i]; {
		case c == '"':
			l.off = i + 1
			return true
		case c < 0x20:
			return false
		case c == '\\':
			if i+1 >= len(l.data) {
				return false
			}
			switch l.data[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				if _, ok := l.hex4(i + 2); !ok {
					return false
				}
				i += 5
			default:
				return false
			}
		}
	}
	return false
}

// skipNumber skips -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?.
func (l *lexer) skipNumber() bool {
	d, i := l.data, l.off
	if d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && isDigit(d[i]):
		i = skipDigits(d, i)
	default:
		return false
	}
	if i < len(d) && d[i] == '.' {
		if i++; i >= len(d) || !isDigit(d[i]) {
			return false
		}
		i = skipDigits(d, i)
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		if i++; i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if i >= len(d) || !isDigit(d[i]) {
			return false
		}
		i = skipDigits(d, i)
	}
	l.off = i
	return true
}

func skipDigits(d []byte, i int) int {
	for i < len(d) && isDigit(d[i]) {
		i++
	}
	return i
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// validJSON is json.Valid, cheaper when the answer is yes: the lexer
// vouches for what it can read, and encoding/json judges the rest.
func validJSON(b []byte) bool {
	l := lexer{data: b}
	if l.value(0) && l.atEnd() {
		return true
	}
	return json.Valid(b)
}
