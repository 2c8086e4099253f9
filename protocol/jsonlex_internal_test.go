package protocol

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// FuzzLexerAgreesWithEncodingJSON checks each reader of the lexer against
// encoding/json on the same bytes: whatever the lexer reads, encoding/json
// reads the same way, and a shallow value encoding/json accepts, the lexer
// accepts too (otherwise the fast paths would decline it for nothing).
func FuzzLexerAgreesWithEncodingJSON(f *testing.F) {
	for _, s := range []string{
		`0`, `-0`, `1`, `-1`, `01`, `1.5`, `-1.5e+10`, `1E5`, `1.`, `.5`, `-`, `1e`, `18446744073709551615`,
		`18446744073709551616`, `9223372036854775807`, `-9223372036854775808`, `-9223372036854775809`, `4294967296`,
		`""`, `"a"`, `"\""`, `"\\\/\b\f\n\r\t"`, `"\u00e9\u00E9"`, `"\ud83d\ude00"`, `"\ud83d"`, `"\ude00"`, `"\ud83dx"`,
		`"\ud83d\u0041"`, `"\x"`, `"\u12"`, "\"\xff\"", "\"\x01\"", "\"é✓\"", `"\u0000"`, `"unterminated`,
		`true`, `false`, `null`, `tru`, `nul`, `[]`, `[1,]`, `[,1]`, `{}`, `{"a":1}`, `{"a":1,}`, `{"a"}`, `{1:2}`,
		` {"a" : [ 1 , {"b":null} ] } `, "\t\r\n[]", `[[[[[[]]]]]]`, `[1 2]`, `{"a":1}{}`, "\ufeff{}", ``, ` `,
	} {
		f.Add([]byte(s))
	}
	f.Add([]byte(strings.Repeat("[", maxLexDepth+1) + strings.Repeat("]", maxLexDepth+1)))
	f.Fuzz(func(t *testing.T, data []byte) {
		read := func(fn func(l *lexer) bool) bool {
			l := lexer{data: data}
			return fn(&l) && l.atEnd()
		}

		valid := json.Valid(data)
		if read(func(l *lexer) bool { return l.value(0) }) {
			if !valid {
				t.Fatalf("lexer accepts %q, json.Valid does not", data)
			}
		} else if valid && len(data) <= maxLexDepth {
			t.Fatalf("lexer declines %q, which json.Valid accepts", data)
		}
		if validJSON(data) != valid {
			t.Fatalf("validJSON(%q) = %v", data, !valid)
		}

		var raw json.RawMessage
		if read(func(l *lexer) bool { var ok bool; raw, ok = l.raw(); return ok }) {
			var want json.RawMessage
			if err := json.Unmarshal(data, &want); err != nil || !bytes.Equal(raw, want) {
				t.Fatalf("raw(%q) = %q, encoding/json %q, %v", data, raw, want, err)
			}
		}

		var s string
		if read(func(l *lexer) bool { var ok bool; s, ok = l.quoted(); return ok }) {
			var want string
			if err := json.Unmarshal(data, &want); err != nil || s != want {
				t.Fatalf("quoted(%q) = %q, encoding/json %q, %v", data, s, want, err)
			}
		}

		for _, bits := range []uint{32, 64} {
			var n uint64
			if read(func(l *lexer) bool { var ok bool; n, ok = l.unsigned(bits); return ok }) {
				want, err := decodeInto[uint64](data, bits)
				if err != nil || n != want {
					t.Fatalf("unsigned(%q, %d) = %d, encoding/json %d, %v", data, bits, n, want, err)
				}
			}
			var i int64
			if read(func(l *lexer) bool { var ok bool; i, ok = l.signed(bits); return ok }) {
				want, err := decodeInto[int64](data, bits)
				if err != nil || i != want {
					t.Fatalf("signed(%q, %d) = %d, encoding/json %d, %v", data, bits, i, want, err)
				}
			}
		}
	})
}

// decodeInto decodes data with encoding/json into an integer of the given
// width and signedness.
func decodeInto[T int64 | uint64](data []byte, bits uint) (T, error) {
	var n T
	var err error
	switch p := any(&n).(type) {
	case *uint64:
		if bits == 32 {
			var v uint32
			err = json.Unmarshal(data, &v)
			*p = uint64(v)
		} else {
			err = json.Unmarshal(data, p)
		}
	case *int64:
		if bits == 32 {
			var v int32
			err = json.Unmarshal(data, &v)
			*p = int64(v)
		} else {
			err = json.Unmarshal(data, p)
		}
	}
	return n, err
}

func TestLexerIntegerLimits(t *testing.T) {
	tests := []struct {
		in     string
		bits   uint
		signed bool
		want   string // "" when the lexer declines
	}{
		{"4294967295", 32, false, "4294967295"},
		{"4294967296", 32, false, ""},
		{"18446744073709551615", 64, false, "18446744073709551615"},
		{"18446744073709551616", 64, false, ""},
		{"-0", 64, false, ""},
		{"-0", 64, true, "0"},
		{"9223372036854775807", 64, true, "9223372036854775807"},
		{"9223372036854775808", 64, true, ""},
		{"-9223372036854775808", 64, true, "-9223372036854775808"},
		{"-9223372036854775809", 64, true, ""},
		{"-2147483648", 32, true, "-2147483648"},
		{"2147483648", 32, true, ""},
		{"1.0", 64, true, ""},
		{"1e3", 64, false, ""},
		{"007", 64, false, ""},
	}
	for _, tc := range tests {
		l := lexer{data: []byte(tc.in)}
		var got string
		if tc.signed {
			if n, ok := l.signed(tc.bits); ok {
				got = strconv.FormatInt(n, 10)
			}
		} else if n, ok := l.unsigned(tc.bits); ok {
			got = strconv.FormatUint(n, 10)
		}
		if got != tc.want {
			t.Errorf("%q as %d bits (signed %v): %q, want %q", tc.in, tc.bits, tc.signed, got, tc.want)
		}
	}
}
