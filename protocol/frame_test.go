package protocol_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/splashfabric/splashfabric/protocol"
)

const validLine = `{"session_id":"worker-1","role":"host","seq":1,"msg":{"kind":"chunk"},"tag":"` +
	"00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff" + `"}`

func TestParseJSONLineAcceptsValidShape(t *testing.T) {
	for _, line := range []string{validLine, validLine + "\n", " " + validLine + " \r\n"} {
		f, err := protocol.ParseJSONLine([]byte(line))
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if f.SessionID != "worker-1" || f.Role != protocol.RoleHost || f.Sequence != 1 || string(f.Message) != `{"kind":"chunk"}` {
			t.Fatalf("decoded %+v", f)
		}
	}
}

func TestToJSONLineRoundTripsEveryMessage(t *testing.T) {
	sessions := []string{"worker-1", `quote " back \ slash`, "tab\tnew\nline\x01\x7f", "ünïcødé ✓ <&>"}
	for _, session := range sessions {
		for i, m := range oneOfEach(t) {
			f, err := protocol.SealFrame(testKey, session, protocol.RoleWorker, uint64(i+1), m)
			if err != nil {
				t.Fatal(err)
			}
			line, err := f.ToJSONLine()
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Count(line, []byte("\n")) != 1 || line[len(line)-1] != '\n' {
				t.Fatalf("not one line: %q", line)
			}
			if !json.Valid(line) {
				t.Fatalf("not JSON: %q", line)
			}
			back, err := protocol.ParseJSONLine(line)
			if err != nil {
				t.Fatalf("%q: %v", line, err)
			}
			if !reflect.DeepEqual(back, f) {
				t.Fatalf("round trip:\n got %+v\nwant %+v", back, f)
			}
			got, err := protocol.VerifyFrame(testKey, back)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, m) {
				t.Fatalf("message changed:\n got %+v\nwant %+v", got, m)
			}
		}
	}
}

// A peer's encoder may not escape HTML or may add spaces; the tag covers the
// bytes it sent, so they must survive a parse and re-encode unchanged.
func TestToJSONLineKeepsMessageBytesVerbatim(t *testing.T) {
	msg := `{ "kind": "chunk", "chunk": {"request_id": "r", "sequence": 1, "text": "<b>&</b>"} }`
	f := sealRaw("s", protocol.RoleWorker, 1, msg)
	line, err := f.ToJSONLine()
	if err != nil {
		t.Fatal(err)
	}
	back, err := protocol.ParseJSONLine(line)
	if err != nil {
		t.Fatal(err)
	}
	if string(back.Message) != msg {
		t.Fatalf("msg rewritten: %s", back.Message)
	}
	if _, err := protocol.VerifyFrame(testKey, back); err != nil {
		t.Fatal(err)
	}
}

func TestParseJSONLineRejectsOversize(t *testing.T) {
	line := []byte(validLine)
	tests := []struct {
		name    string
		line    []byte
		max     int
		wantErr error
	}{
		{"exactly the limit", line, len(line), nil},
		{"limit excludes the newline", append(append([]byte{}, line...), '\n'), len(line), nil},
		{"one byte over", line, len(line) - 1, protocol.ErrFrameTooLarge},
		{"zero means default", line, 0, nil},
		{"over the default", append(bytes.Repeat([]byte(" "), protocol.DefaultMaxFrameBytes), line...), 0, protocol.ErrFrameTooLarge},
		{"garbage over the limit is still too large", bytes.Repeat([]byte("x"), 100), 99, protocol.ErrFrameTooLarge},
	}
	for _, tc := range tests {
		_, err := protocol.ParseJSONLineLimit(tc.line, tc.max)
		wantErr(t, tc.name, err, tc.wantErr)
	}
	_, err := protocol.ParseJSONLine(append(bytes.Repeat([]byte(" "), protocol.DefaultMaxFrameBytes), line...))
	wantErr(t, "ParseJSONLine default", err, protocol.ErrFrameTooLarge)
}

func TestParseJSONLineRejectsMalformed(t *testing.T) {
	tag := strings.Repeat("ab", protocol.AuthTagBytes)
	line := func(fields string) string { return "{" + fields + "}" }
	const sid, role, seq, msg = `"session_id":"s"`, `"role":"worker"`, `"seq":1`, `"msg":{"kind":"chunk"}`
	tagF := `"tag":"` + tag + `"`
	join := func(parts ...string) string { return line(strings.Join(parts, ",")) }
	tests := []struct {
		name string
		line string
	}{
		{"empty", ""},
		{"newline only", "\n"},
		{"not json", "hello"},
		{"json null", "null"},
		{"json array", "[1,2]"},
		{"json string", `"frame"`},
		{"truncated", validLine[:len(validLine)-2]},
		{"trailing data", validLine + `{}`},
		{"two frames on one line", validLine + validLine},
		{"newline inside", strings.Replace(validLine, `,"seq"`, "\n,\"seq\"", 1)},
		{"unknown field", join(sid, role, seq, msg, tagF, `"extra":1`)},
		{"missing session", join(role, seq, msg, tagF)},
		{"empty session", join(`"session_id":""`, role, seq, msg, tagF)},
		{"session not a string", join(`"session_id":7`, role, seq, msg, tagF)},
		{"missing role", join(sid, seq, msg, tagF)},
		{"numeric role", join(sid, `"role":2`, seq, msg, tagF)},
		{"unknown role", join(sid, `"role":"admin"`, seq, msg, tagF)},
		{"missing seq", join(sid, role, msg, tagF)},
		{"seq zero", join(sid, role, `"seq":0`, msg, tagF)},
		{"seq negative", join(sid, role, `"seq":-1`, msg, tagF)},
		{"seq fractional", join(sid, role, `"seq":1.5`, msg, tagF)},
		{"seq overflows", join(sid, role, `"seq":18446744073709551616`, msg, tagF)},
		{"seq as string", join(sid, role, `"seq":"1"`, msg, tagF)},
		{"missing msg", join(sid, role, seq, tagF)},
		{"msg null", join(sid, role, seq, `"msg":null`, tagF)},
		{"msg string", join(sid, role, seq, `"msg":"{}"`, tagF)},
		{"msg array", join(sid, role, seq, `"msg":[]`, tagF)},
		{"missing tag", join(sid, role, seq, msg)},
		{"short tag", join(sid, role, seq, msg, `"tag":"abcd"`)},
		{"uppercase tag", join(sid, role, seq, msg, `"tag":"`+strings.ToUpper(tag)+`"`)},
		{"non-hex tag", join(sid, role, seq, msg, `"tag":"`+strings.Repeat("zz", protocol.AuthTagBytes)+`"`)},
	}
	for _, tc := range tests {
		f, err := protocol.ParseJSONLine([]byte(tc.line))
		wantErr(t, tc.name, err, protocol.ErrMalformedFrame)
		if !reflect.DeepEqual(f, protocol.Frame{}) {
			t.Fatalf("%s: rejected line returned a frame: %+v", tc.name, f)
		}
	}
}

func TestToJSONLineRejectsFramesTheParserWouldRefuse(t *testing.T) {
	good, err := protocol.SealFrame(testKey, "s", protocol.RoleHost, 1, oneOfEach(t)[0])
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		edit    func(*protocol.Frame)
		wantErr error
	}{
		{"sealed frame", func(*protocol.Frame) {}, nil},
		{"empty session", func(f *protocol.Frame) { f.SessionID = "" }, protocol.ErrInvalidSession},
		{"long session", func(f *protocol.Frame) { f.SessionID = strings.Repeat("s", protocol.MaxSessionIDBytes+1) }, protocol.ErrInvalidSession},
		{"role zero", func(f *protocol.Frame) { f.Role = 0 }, protocol.ErrWrongRole},
		{"seq zero", func(f *protocol.Frame) { f.Sequence = 0 }, protocol.ErrSequence},
		{"no msg", func(f *protocol.Frame) { f.Message = nil }, protocol.ErrMalformedFrame},
		{"msg not json", func(f *protocol.Frame) { f.Message = json.RawMessage(`{"kind":`) }, protocol.ErrMalformedFrame},
		{"msg on two lines", func(f *protocol.Frame) { f.Message = json.RawMessage("{\n}") }, protocol.ErrMalformedFrame},
		{"bad tag", func(f *protocol.Frame) { f.Tag = "x" }, protocol.ErrMalformedFrame},
	}
	for _, tc := range tests {
		f := good
		tc.edit(&f)
		_, err := f.ToJSONLine()
		wantErr(t, tc.name, err, tc.wantErr)
	}
}

// A frame a peer got wrong is refused without repeating what it wrote:
// the error reaches logs, the audit and a script.
func TestParseErrorsHoldNoPeerBytes(t *testing.T) {
	const secret = "tok-3f9a1c"
	for _, line := range []string{
		`{"session_id":"s","role":"worker","seq":1,"msg":{},"tag":"` + strings.Repeat("0", 64) + `","` + secret + `":1}`,
		`{"session_id":"s","role":"` + secret + `","seq":1,"msg":{},"tag":"` + strings.Repeat("0", 64) + `"}`,
		`{"session_id":"s","role":"worker","seq":"` + secret + `","msg":{},"tag":"` + strings.Repeat("0", 64) + `"}`,
		secret + ` is not a frame`,
	} {
		_, err := protocol.ParseJSONLine([]byte(line))
		if err == nil {
			t.Fatalf("accepted %q", line)
		}
		if strings.Contains(err.Error(), "tok-") {
			t.Errorf("the error repeats the peer's bytes: %v", err)
		}
	}
}
