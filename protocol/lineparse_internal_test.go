package protocol

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// parseLineReference is ParseJSONLineLimit without its fast path: the
// decoder every line went through before parseExactLine existed.
func parseLineReference(line []byte) (Frame, error) {
	line = bytes.TrimSuffix(line, []byte{'\n'})
	if len(line) > DefaultMaxFrameBytes || bytes.IndexByte(line, '\n') >= 0 {
		return ParseJSONLine(line) // the checks before parsing are shared
	}
	f, err := parseLineStrict(line)
	if err != nil {
		return Frame{}, err
	}
	if err := f.checkShape(); err != nil {
		if !isMalformed(err) {
			err = fmt.Errorf("%w: %w", ErrMalformedFrame, err)
		}
		return Frame{}, err
	}
	return f, nil
}

// checkLinePathsAgree fails unless the fast path, where it takes a line,
// yields the strict decoder's Frame, and ParseJSONLine as a whole gives the
// same Frame or the same error classes as the strict decoder alone.
func checkLinePathsAgree(t *testing.T, line []byte) (fast bool) {
	t.Helper()
	trimmed := bytes.TrimSuffix(line, []byte{'\n'})
	if f, ok := parseExactLine(trimmed); ok {
		fast = true
		strict, err := parseLineStrict(trimmed)
		if err != nil {
			t.Fatalf("fast path took a line the strict decoder refuses (%v):\n%q", err, line)
		}
		if !reflect.DeepEqual(f, strict) {
			t.Fatalf("paths disagree on %q:\nfast   %+v\nstrict %+v", line, f, strict)
		}
	}
	got, gotErr := ParseJSONLine(line)
	want, wantErr := parseLineReference(line)
	if !reflect.DeepEqual(got, want) || errorClasses(gotErr) != errorClasses(wantErr) {
		t.Fatalf("ParseJSONLine(%q) = %+v, %v\nreference  %+v, %v", line, got, gotErr, want, wantErr)
	}
	return fast
}

// FuzzParseLinePathsAgree checks parseExactLine against the strict decoder
// on every input, seeded with the committed corpus of FuzzParseJSONLine.
func FuzzParseLinePathsAgree(f *testing.F) {
	for _, line := range committedCorpus(f) {
		f.Add(line)
	}
	for _, line := range sealedLines(f) {
		f.Add(line)
	}
	f.Fuzz(func(t *testing.T, line []byte) { checkLinePathsAgree(t, line) })
}

func TestParseExactLineTakesWhatToJSONLineWrites(t *testing.T) {
	for _, line := range sealedLines(t) {
		if !checkLinePathsAgree(t, line) {
			t.Fatalf("fast path declined a line ToJSONLine wrote:\n%q", line)
		}
	}
	f := Frame{SessionID: "quote \" back \\ tab\t ✓", Role: RoleWorker, Sequence: 1<<64 - 1,
		Message: []byte(`{ "kind" : "chunk" }`), Tag: strings.Repeat("0f", AuthTagBytes)}
	line, err := f.ToJSONLine()
	if err != nil {
		t.Fatal(err)
	}
	if !checkLinePathsAgree(t, line) {
		t.Fatalf("fast path declined an escaped session or a spaced message:\n%q", line)
	}
}

// Every other spelling goes to the strict decoder, which may accept it
// (case-folded or repeated keys, whitespace) or refuse it; either way the
// answer is the strict decoder's. A few lines the fast path does read and
// checkShape then refuses, on both paths alike (wantFast).
func TestParseExactLineLeavesOtherSpellingsToTheStrictDecoder(t *testing.T) {
	good := string(sealedLines(t)[1])
	good = good[:len(good)-1]
	tag := good[len(good)-2-2*AuthTagBytes : len(good)-2]
	msg := good[strings.Index(good, `"msg":`)+len(`"msg":`) : strings.LastIndex(good, `,"tag"`)]
	tests := []struct {
		name     string
		line     string
		wantFast bool
	}{
		{"leading space", " " + good, false},
		{"space after colon", strings.Replace(good, `"seq":`, `"seq": `, 1), true},
		{"fields reordered", `{"role":"host","session_id":"worker-1","seq":2,"msg":` + msg + `,"tag":"` + tag + `"}`, false},
		{"case-folded key", strings.Replace(good, `"role"`, `"ROLE"`, 1), false},
		{"duplicate tag", strings.TrimSuffix(good, "}") + `,"tag":"` + tag + `"}`, false},
		{"duplicate msg and tag", strings.TrimSuffix(good, `"}`) + `","msg":{},"tag":"` + tag + `"}`, false},
		{"escaped key", strings.Replace(good, `"seq"`, `"s\u0065q"`, 1), false},
		{"invalid utf-8 session", strings.Replace(good, `"worker-1"`, "\"w\xffr\"", 1), false},
		{"lone surrogate in session", strings.Replace(good, `"worker-1"`, `"w\ud800r"`, 1), false},
		{"seq with exponent", strings.Replace(good, `"seq":2`, `"seq":2e0`, 1), false},
		{"seq leading zero", strings.Replace(good, `"seq":2`, `"seq":02`, 1), false},
		{"seq negative zero", strings.Replace(good, `"seq":2`, `"seq":-0`, 1), false},
		{"seq overflows", strings.Replace(good, `"seq":2`, `"seq":18446744073709551616`, 1), false},
		{"seq zero", strings.Replace(good, `"seq":2`, `"seq":0`, 1), true},
		{"msg with trailing space", strings.Replace(good, `,"tag"`, ` ,"tag"`, 1), false},
		{"msg not an object", strings.Replace(good, msg, `[1]`, 1), false},
		{"msg null", strings.Replace(good, msg, `null`, 1), false},
		{"msg truncated", strings.Replace(good, msg, msg[:len(msg)-1], 1), false},
		{"msg two values", strings.Replace(good, msg, msg+msg, 1), false},
		{"uppercase tag", strings.Replace(good, tag, strings.ToUpper(tag), 1), false},
		{"escaped tag digit", strings.Replace(good, tag, `\u0030`+tag[1:], 1), false},
		{"short tag", strings.Replace(good, tag, tag[2:], 1), false},
		{"trailing data", good + "{}", false},
		{"long session", strings.Replace(good, `"worker-1"`, `"`+strings.Repeat("s", MaxSessionIDBytes+1)+`"`, 1), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if fast := checkLinePathsAgree(t, []byte(tc.line)); fast != tc.wantFast {
				t.Fatalf("fast path took it: %v, want %v", fast, tc.wantFast)
			}
		})
	}
}
