package protocol_test

import (
	"reflect"
	"testing"

	"github.com/splashfabric/splashfabric/protocol"
)

func newPair(t *testing.T) (host, worker *protocol.SessionAuthenticator) {
	t.Helper()
	host, err := protocol.NewSessionAuthenticator("worker-1", testKey, protocol.RoleHost)
	if err != nil {
		t.Fatal(err)
	}
	worker, err = protocol.NewSessionAuthenticator("worker-1", testKey, protocol.RoleWorker)
	if err != nil {
		t.Fatal(err)
	}
	return host, worker
}

func chunk(seq uint64) protocol.WorkerMessage {
	return protocol.ChunkMessage(protocol.Chunk{RequestID: "req-1", Sequence: seq, Text: "x"})
}

func mustSeal(t *testing.T, a *protocol.SessionAuthenticator, m protocol.WorkerMessage) protocol.Frame {
	t.Helper()
	f, err := a.Seal(m)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestNewSessionAuthenticatorRejects(t *testing.T) {
	tests := []struct {
		name    string
		session string
		key     protocol.SessionKey
		role    protocol.SessionRole
		wantErr error
	}{
		{"host", "s", testKey, protocol.RoleHost, nil},
		{"worker", "s", testKey, protocol.RoleWorker, nil},
		{"empty session", "", testKey, protocol.RoleHost, protocol.ErrInvalidSession},
		{"session not utf-8", "\xfe", testKey, protocol.RoleHost, protocol.ErrInvalidSession},
		{"zero key", "s", protocol.SessionKey{}, protocol.RoleHost, protocol.ErrInvalidKey},
		{"zero role", "s", testKey, 0, protocol.ErrWrongRole},
		{"unknown role", "s", testKey, 3, protocol.ErrWrongRole},
	}
	for _, tc := range tests {
		a, err := protocol.NewSessionAuthenticator(tc.session, tc.key, tc.role)
		wantErr(t, tc.name, err, tc.wantErr)
		if err == nil && (a.SessionID() != tc.session || a.Role() != tc.role) {
			t.Fatalf("%s: got %q %v", tc.name, a.SessionID(), a.Role())
		}
		if err != nil && a != nil {
			t.Fatalf("%s: returned an authenticator", tc.name)
		}
	}
}

func TestSealNumbersEachDirectionFromOne(t *testing.T) {
	host, worker := newPair(t)
	for want := uint64(1); want <= 3; want++ {
		f := mustSeal(t, host, chunk(want))
		if f.Sequence != want || f.Role != protocol.RoleHost || f.SessionID != "worker-1" {
			t.Fatalf("host frame %d: %+v", want, f)
		}
		if _, err := worker.Open(f); err != nil {
			t.Fatal(err)
		}
	}
	if f := mustSeal(t, worker, chunk(1)); f.Sequence != 1 {
		t.Fatalf("worker's first frame has seq %d: directions share a counter", f.Sequence)
	}
	if sent, opened := worker.Sequences(); sent != 1 || opened != 3 {
		t.Fatalf("worker sequences %d/%d", sent, opened)
	}
}

func TestSealRejectsInvalidMessageWithoutConsumingSequence(t *testing.T) {
	host, worker := newPair(t)
	_, err := host.Seal(protocol.WorkerMessage{Kind: protocol.KindChunk, Chunk: &protocol.Chunk{}})
	wantErr(t, "invalid", err, protocol.ErrInvalidMessage)
	if sent, _ := host.Sequences(); sent != 0 {
		t.Fatalf("rejected Seal consumed seq: %d", sent)
	}
	f := mustSeal(t, host, chunk(1))
	if f.Sequence != 1 {
		t.Fatalf("seq %d after a rejected Seal", f.Sequence)
	}
	if _, err := worker.Open(f); err != nil {
		t.Fatal(err)
	}
}

func TestOpenReturnsTheSealedMessage(t *testing.T) {
	host, worker := newPair(t)
	for _, m := range oneOfEach(t) {
		got, err := worker.Open(mustSeal(t, host, m))
		if err != nil {
			t.Fatalf("%s: %v", m.Kind, err)
		}
		if !reflect.DeepEqual(got, m) {
			t.Fatalf("%s: got %+v", m.Kind, got)
		}
	}
}

func TestOpenRejectsWrongSession(t *testing.T) {
	host, _ := newPair(t)
	other, err := protocol.NewSessionAuthenticator("worker-2", testKey, protocol.RoleWorker)
	if err != nil {
		t.Fatal(err)
	}
	_, err = other.Open(mustSeal(t, host, chunk(1)))
	wantErr(t, "other session", err, protocol.ErrInvalidSession)
}

func TestOpenRejectsOwnRole(t *testing.T) {
	host, _ := newPair(t)
	f := mustSeal(t, host, chunk(1))
	_, err := host.Open(f)
	wantErr(t, "reflected to sender", err, protocol.ErrWrongRole)
	// Another host end of the same session must not accept host frames
	// either: the role, not the instance, decides.
	host2, _ := newPair(t)
	_, err = host2.Open(f)
	wantErr(t, "other host", err, protocol.ErrWrongRole)
}

func TestOpenRejectsBadTag(t *testing.T) {
	host, worker := newPair(t)
	f := mustSeal(t, host, chunk(1))
	f.Tag = f.Tag[1:] + f.Tag[:1]
	_, err := worker.Open(f)
	wantErr(t, "rotated tag", err, protocol.ErrBadTag)
}

func TestOpenRejectsForgedRoleEvenWithValidSequence(t *testing.T) {
	host, _ := newPair(t)
	f := mustSeal(t, host, chunk(1))
	f.Role = protocol.RoleWorker // pretend the worker sent it back to the host
	_, err := host.Open(f)
	wantErr(t, "relabelled role", err, protocol.ErrBadTag)
}

func TestOpenRejectsReplayedSequence(t *testing.T) {
	host, worker := newPair(t)
	f := mustSeal(t, host, chunk(1))
	if _, err := worker.Open(f); err != nil {
		t.Fatal(err)
	}
	_, err := worker.Open(f)
	wantErr(t, "replay", err, protocol.ErrSequence)
}

func TestOpenRejectsSkippedSequence(t *testing.T) {
	host, worker := newPair(t)
	mustSeal(t, host, chunk(1)) // lost in transit
	_, err := worker.Open(mustSeal(t, host, chunk(2)))
	wantErr(t, "skip", err, protocol.ErrSequence)
}

func TestOpenRejectsReorderedSequence(t *testing.T) {
	host, worker := newPair(t)
	f1 := mustSeal(t, host, chunk(1))
	f2 := mustSeal(t, host, chunk(2))
	_, err := worker.Open(f2)
	wantErr(t, "second before first", err, protocol.ErrSequence)
	if _, err := worker.Open(f1); err != nil {
		t.Fatal(err)
	}
	if _, err := worker.Open(f2); err != nil {
		t.Fatalf("in-order frame after a rejected reorder: %v", err)
	}
}

func TestOpenRejectsAuthenticInvalidMessage(t *testing.T) {
	_, worker := newPair(t)
	f := sealRaw("worker-1", protocol.RoleHost, 1, `{"kind":"chunk"}`)
	_, err := worker.Open(f)
	wantErr(t, "invalid body", err, protocol.ErrInvalidMessage)
}

func TestOpenLeavesStateUnchangedOnReject(t *testing.T) {
	host, worker := newPair(t)
	if _, err := worker.Open(mustSeal(t, host, chunk(1))); err != nil {
		t.Fatal(err)
	}
	first := sealRaw("worker-1", protocol.RoleHost, 1, `{"kind":"chunk","chunk":{"request_id":"r","sequence":1}}`)
	next := mustSeal(t, host, chunk(2))
	later := sealRaw("worker-1", protocol.RoleHost, 3, `{"kind":"chunk","chunk":{"request_id":"r","sequence":3}}`)
	otherHost, _ := protocol.NewSessionAuthenticator("worker-9", testKey, protocol.RoleHost)
	foreign := mustSeal(t, otherHost, chunk(1))
	own := mustSeal(t, worker, chunk(1))

	tests := []struct {
		name    string
		edit    func() protocol.Frame
		wantErr error
	}{
		{"replay", func() protocol.Frame { return first }, protocol.ErrSequence},
		{"skip", func() protocol.Frame { return later }, protocol.ErrSequence},
		{"other session", func() protocol.Frame { return foreign }, protocol.ErrInvalidSession},
		{"own role", func() protocol.Frame { return own }, protocol.ErrWrongRole},
		{"bad tag", func() protocol.Frame { f := next; f.Tag = first.Tag; return f }, protocol.ErrBadTag},
		{"malformed tag", func() protocol.Frame { f := next; f.Tag = "00"; return f }, protocol.ErrMalformedFrame},
		{"invalid body", func() protocol.Frame {
			return sealRaw("worker-1", protocol.RoleHost, 2, `{"kind":"nope"}`)
		}, protocol.ErrInvalidMessage},
		{"no role", func() protocol.Frame { f := next; f.Role = 0; return f }, protocol.ErrWrongRole},
	}
	for _, tc := range tests {
		sent, opened := worker.Sequences()
		m, err := worker.Open(tc.edit())
		wantErr(t, tc.name, err, tc.wantErr)
		if !reflect.DeepEqual(m, protocol.WorkerMessage{}) {
			t.Fatalf("%s: rejected Open returned a message", tc.name)
		}
		if s, o := worker.Sequences(); s != sent || o != opened {
			t.Fatalf("%s: sequences moved from %d/%d to %d/%d", tc.name, sent, opened, s, o)
		}
	}
	if _, err := worker.Open(next); err != nil {
		t.Fatalf("the expected frame after rejections: %v", err)
	}
}
