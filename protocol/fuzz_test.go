package protocol_test

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/splashfabric/splashfabric/protocol"
)

// addSeeds gives both fuzz targets real frames of every kind as a starting
// point, besides the committed corpus under testdata/fuzz.
func addSeeds(f *testing.F) {
	for i, m := range oneOfEach(f) {
		fr, err := protocol.SealFrame(testKey, "worker-1", protocol.RoleHost, uint64(i+1), m)
		if err != nil {
			f.Fatal(err)
		}
		line, err := fr.ToJSONLine()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(line)
	}
	f.Add([]byte(validLine))
	f.Add([]byte("{}"))
	f.Add([]byte(""))
}

// FuzzParseJSONLine checks that the parser never panics, that everything it
// accepts re-encodes to a line that parses back to the same frame, and that
// verifying an accepted frame never panics and yields only valid messages.
func FuzzParseJSONLine(f *testing.F) {
	addSeeds(f)
	signer := protocol.NewSigner(testKey)
	f.Fuzz(func(t *testing.T, line []byte) {
		fr, err := protocol.ParseJSONLine(line)
		if err != nil {
			if !errors.Is(err, protocol.ErrMalformedFrame) && !errors.Is(err, protocol.ErrFrameTooLarge) {
				t.Fatalf("untyped parse error: %v", err)
			}
			return
		}
		out, err := fr.ToJSONLine()
		if err != nil {
			t.Fatalf("accepted frame does not encode: %v", err)
		}
		back, err := protocol.ParseJSONLine(out)
		if err != nil {
			t.Fatalf("re-encoded line does not parse: %v\n%q", err, out)
		}
		if !reflect.DeepEqual(back, fr) {
			t.Fatalf("round trip changed the frame:\n%+v\n%+v", fr, back)
		}
		again, err := back.ToJSONLine()
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("encoding is not stable: %q vs %q (%v)", out, again, err)
		}
		if m, err := signer.Verify(fr); err == nil {
			if err := m.Validate(); err != nil {
				t.Fatalf("verified an invalid message: %v", err)
			}
		}
	})
}

// FuzzOpen feeds arbitrary lines to a worker end and checks that a rejected
// frame leaves it where it was and that an accepted one is the host's next
// frame.
func FuzzOpen(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, line []byte) {
		worker, err := protocol.NewSessionAuthenticator("worker-1", testKey, protocol.RoleWorker)
		if err != nil {
			t.Fatal(err)
		}
		fr, err := protocol.ParseJSONLine(line)
		if err != nil {
			return
		}
		m, err := worker.Open(fr)
		sent, opened := worker.Sequences()
		if err != nil {
			if sent != 0 || opened != 0 {
				t.Fatalf("rejected frame moved the session to %d/%d: %v", sent, opened, err)
			}
			return
		}
		if opened != 1 || fr.Sequence != 1 || fr.Role != protocol.RoleHost || fr.SessionID != "worker-1" {
			t.Fatalf("accepted %+v, session at %d", fr, opened)
		}
		if err := m.Validate(); err != nil {
			t.Fatalf("opened an invalid message: %v", err)
		}
	})
}
