package protocol_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/splashfabric/splashfabric/protocol"
)

func TestSignerSealVerifyRoundTrip(t *testing.T) {
	s := protocol.NewSigner(testKey)
	for i, m := range oneOfEach(t) {
		f, err := s.Seal("req-1", protocol.RoleWorker, uint64(i+1), m)
		if err != nil {
			t.Fatalf("%s: %v", m.Kind, err)
		}
		got, err := s.Verify(f)
		if err != nil {
			t.Fatalf("%s: %v", m.Kind, err)
		}
		if !reflect.DeepEqual(got, m) {
			t.Fatalf("%s: got %+v", m.Kind, got)
		}
	}
}

func TestSignerMatchesStatelessFunctions(t *testing.T) {
	m := oneOfEach(t)[2]
	a, err := protocol.NewSigner(testKey).Seal("req-1", protocol.RoleWorker, 7, m)
	if err != nil {
		t.Fatal(err)
	}
	b, err := protocol.SealFrame(testKey, "req-1", protocol.RoleWorker, 7, m)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("Signer and SealFrame differ:\n%+v\n%+v", a, b)
	}
}

// The fabric keeps its own replay window, so the stateless Signer must
// accept any order and repeats.
func TestSignerVerifyLeavesOrderToTheCaller(t *testing.T) {
	s := protocol.NewSigner(testKey)
	m := oneOfEach(t)[2]
	f3, _ := s.Seal("req-1", protocol.RoleWorker, 3, m)
	f1, _ := s.Seal("req-1", protocol.RoleWorker, 1, m)
	for _, f := range []protocol.Frame{f3, f1, f3} {
		if _, err := s.Verify(f); err != nil {
			t.Fatal(err)
		}
	}
}

func TestSignerSealRejects(t *testing.T) {
	valid := oneOfEach(t)[0]
	tests := []struct {
		name    string
		session string
		role    protocol.SessionRole
		seq     uint64
		msg     protocol.WorkerMessage
		wantErr error
	}{
		{"invalid message", "s", protocol.RoleHost, 1, protocol.WorkerMessage{Kind: protocol.KindInvoke}, protocol.ErrInvalidMessage},
		{"empty session", "", protocol.RoleHost, 1, valid, protocol.ErrInvalidSession},
		{"session not utf-8", "\xff", protocol.RoleHost, 1, valid, protocol.ErrInvalidSession},
		{"long session", strings.Repeat("s", protocol.MaxSessionIDBytes+1), protocol.RoleHost, 1, valid, protocol.ErrInvalidSession},
		{"role zero", "s", 0, 1, valid, protocol.ErrWrongRole},
		{"unknown role", "s", 9, 1, valid, protocol.ErrWrongRole},
		{"seq zero", "s", protocol.RoleHost, 0, valid, protocol.ErrSequence},
	}
	s := protocol.NewSigner(testKey)
	for _, tc := range tests {
		f, err := s.Seal(tc.session, tc.role, tc.seq, tc.msg)
		wantErr(t, tc.name, err, tc.wantErr)
		if !reflect.DeepEqual(f, protocol.Frame{}) {
			t.Fatalf("%s: returned a frame", tc.name)
		}
	}
}

func TestSignerVerifyRejects(t *testing.T) {
	s := protocol.NewSigner(testKey)
	good, err := s.Seal("req-1", protocol.RoleWorker, 5, oneOfEach(t)[3])
	if err != nil {
		t.Fatal(err)
	}
	other, _ := protocol.ParseSessionKey(strings.Repeat("08", protocol.AuthTagBytes))
	flip := func(tag string) string {
		b := []byte(tag)
		if b[10] == '0' {
			b[10] = '1'
		} else {
			b[10] = '0'
		}
		return string(b)
	}
	tests := []struct {
		name    string
		signer  *protocol.Signer
		edit    func(*protocol.Frame)
		wantErr error
	}{
		{"authentic", s, func(*protocol.Frame) {}, nil},
		{"wrong key", protocol.NewSigner(other), func(*protocol.Frame) {}, protocol.ErrBadTag},
		{"tag digit changed", s, func(f *protocol.Frame) { f.Tag = flip(f.Tag) }, protocol.ErrBadTag},
		{"session changed", s, func(f *protocol.Frame) { f.SessionID = "req-2" }, protocol.ErrBadTag},
		{"role changed", s, func(f *protocol.Frame) { f.Role = protocol.RoleHost }, protocol.ErrBadTag},
		{"seq changed", s, func(f *protocol.Frame) { f.Sequence = 6 }, protocol.ErrBadTag},
		{"msg changed", s, func(f *protocol.Frame) {
			f.Message = []byte(strings.Replace(string(f.Message), "done", "DONE", 1))
		}, protocol.ErrBadTag},
		{"msg truncated", s, func(f *protocol.Frame) { f.Message = f.Message[:len(f.Message)-1] }, protocol.ErrBadTag},
		{"tag malformed", s, func(f *protocol.Frame) { f.Tag = f.Tag[:10] }, protocol.ErrMalformedFrame},
		{"role invalid", s, func(f *protocol.Frame) { f.Role = 0 }, protocol.ErrWrongRole},
		{"session empty", s, func(f *protocol.Frame) { f.SessionID = "" }, protocol.ErrInvalidSession},
		{"seq zero", s, func(f *protocol.Frame) { f.Sequence = 0 }, protocol.ErrSequence},
	}
	for _, tc := range tests {
		f := good
		f.Message = append([]byte(nil), good.Message...)
		tc.edit(&f)
		m, err := tc.signer.Verify(f)
		wantErr(t, tc.name, err, tc.wantErr)
		if err != nil && !reflect.DeepEqual(m, protocol.WorkerMessage{}) {
			t.Fatalf("%s: returned a message", tc.name)
		}
	}
}

// A key holder can still send a body of the wrong shape; the tag proves who
// sent it, not that it is well formed.
func TestVerifyRejectsAuthenticInvalidMessages(t *testing.T) {
	tests := []struct {
		name string
		msg  string
	}{
		{"unknown field", `{"kind":"chunk","chunk":{"request_id":"r","sequence":1,"text":""},"admin":true}`},
		{"unknown nested field", `{"kind":"chunk","chunk":{"request_id":"r","sequence":1,"text":"","x":1}}`},
		{"payload of another kind", `{"kind":"result","chunk":{"request_id":"r","sequence":1,"text":""}}`},
		{"two payloads", `{"kind":"chunk","chunk":{"request_id":"r","sequence":1},"cancel_disposition":{"request_id":"r","attempt":1,"disposition":"too_late"}}`},
		{"wrong field type", `{"kind":"chunk","chunk":{"request_id":"r","sequence":"1"}}`},
		{"invalid payload", `{"kind":"chunk","chunk":{"request_id":"","sequence":1}}`},
		{"trailing data", `{"kind":"chunk","chunk":{"request_id":"r","sequence":1}} {}`},
		{"not json", `{"kind"`},
		{"field in another case", `{"kind":"chunk","chunk":{"Request_ID":"r","sequence":1}}`},
		{"number out of range", `{"kind":"chunk","chunk":{"request_id":"r","sequence":-1}}`},
		{"invalid json payload", `{"kind":"result","result":{"request_id":"r","attempt":1,"status":"succeeded","payload":{"format":"json","json":{"a":}}}}`},
	}
	for _, tc := range tests {
		_, err := protocol.VerifyFrame(testKey, sealRaw("s", protocol.RoleWorker, 1, tc.msg))
		wantErr(t, tc.name, err, protocol.ErrInvalidMessage)
	}
	_, err := protocol.VerifyFrame(testKey, sealRaw("s", protocol.RoleWorker, 1, `{"kind":"chunk","chunk":{"request_id":"r","sequence":1}}`))
	wantErr(t, "control: valid body", err, nil)
}
