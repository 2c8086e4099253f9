package splashtool_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/sdk/go/splashtool"
)

// sealAs seals msg as a frame of another session, key or role.
func sealAs(t *testing.T, sessionID string, key protocol.SessionKey, role protocol.SessionRole, seq uint64,
	msg protocol.WorkerMessage) []byte {
	t.Helper()
	f, err := protocol.NewSigner(key).Seal(sessionID, role, seq, msg)
	if err != nil {
		t.Fatal(err)
	}
	line, err := f.ToJSONLine()
	if err != nil {
		t.Fatal(err)
	}
	return line
}

func TestFailClosed(t *testing.T) {
	otherKey := protocol.SessionKeyFromArray([protocol.AuthTagBytes]byte{9})
	tests := []struct {
		name string
		// bad returns the offending line; the host has already sent
		// invoke "c1" as frame 1.
		bad     func(t *testing.T, c *conn) []byte
		wantErr error
	}{
		{"bad tag", func(t *testing.T, c *conn) []byte {
			line, _ := c.Seal(invoke("c2", "x"))
			i := bytes.LastIndex(line, []byte(`"tag":"`)) + len(`"tag":"`)
			if line[i] == '0' { // still lowercase hex, so the tag, not the shape, is refused
				line[i] = '1'
			} else {
				line[i] = '0'
			}
			return line
		}, protocol.ErrBadTag},
		{"changed message", func(t *testing.T, c *conn) []byte {
			line, _ := c.Seal(invoke("c2", "x"))
			return bytes.Replace(line, []byte(`"text":"x"`), []byte(`"text":"y"`), 1)
		}, protocol.ErrBadTag},
		{"other key", func(t *testing.T, c *conn) []byte {
			return sealAs(t, session, otherKey, protocol.RoleHost, 2, invoke("c2", "x"))
		}, protocol.ErrBadTag},
		{"replayed sequence", func(t *testing.T, c *conn) []byte {
			return sealAs(t, session, testKey, protocol.RoleHost, 1, invoke("c2", "x"))
		}, protocol.ErrSequence},
		{"skipped sequence", func(t *testing.T, c *conn) []byte {
			return sealAs(t, session, testKey, protocol.RoleHost, 3, invoke("c2", "x"))
		}, protocol.ErrSequence},
		{"other session", func(t *testing.T, c *conn) []byte {
			return sealAs(t, "proc-2", testKey, protocol.RoleHost, 2, invoke("c2", "x"))
		}, protocol.ErrInvalidSession},
		{"reflected role", func(t *testing.T, c *conn) []byte {
			return sealAs(t, session, testKey, protocol.RoleWorker, 2, invoke("c2", "x"))
		}, protocol.ErrWrongRole},
		{"garbage", func(t *testing.T, c *conn) []byte { return []byte("hello\n") }, protocol.ErrMalformedFrame},
		{"empty line", func(t *testing.T, c *conn) []byte { return []byte("\n") }, protocol.ErrMalformedFrame},
		{"too long", func(t *testing.T, c *conn) []byte {
			return append(bytes.Repeat([]byte{'x'}, protocol.DefaultMaxFrameBytes+1), '\n')
		}, protocol.ErrFrameTooLarge},
		{"kind for the other direction", func(t *testing.T, c *conn) []byte {
			line, _ := c.Seal(protocol.ResultMessage(protocol.Result{
				RequestID: "c1", Attempt: 1, Status: protocol.ResultFailed, Error: "x"}))
			return line
		}, splashtool.ErrUnexpectedMessage},
		{"second invoke of a running call", func(t *testing.T, c *conn) []byte {
			line, _ := c.Seal(invoke("c1", "x"))
			return line
		}, splashtool.ErrUnexpectedMessage},
		{"second cancel", func(t *testing.T, c *conn) []byte {
			c.send(cancelMsg("c1"))
			wantDisposition(t, c.next(), "c1", protocol.CancelUnsupported)
			line, _ := c.Seal(cancelMsg("c1"))
			return line
		}, splashtool.ErrUnexpectedMessage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The running call ignores cancels (it is not cancellable) but
			// its context ends when the session fails; it must not
			// answer.
			c := serve(t, func(ctx context.Context, call *splashtool.Call) (splashtool.Output, error) {
				_ = call.Stream("started")
				<-ctx.Done()
				return splashtool.Text("must not be sent"), nil
			})
			c.send(invoke("c1", "x"))
			wantChunk(t, c.next(), "c1", 1, "started")
			_ = c.SendLine(tt.bad(t, c)) // may fail once ServeConn has stopped reading
			err := c.wait()
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("ServeConn: %v, want %v", err, tt.wantErr)
			}
			c.expectClosed()
		})
	}
}
