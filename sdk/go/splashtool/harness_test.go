package splashtool_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/sdk/go/splashtool"
	"github.com/splashfabric/splashfabric/sdk/go/splashtool/splashtooltest"
)

const (
	session  = "proc-1"
	toolName = "text.upper"
	// patience bounds every wait; a correct run never comes near it.
	patience = 10 * time.Second
)

var testKey = protocol.SessionKeyFromArray([protocol.AuthTagBytes]byte{1, 2, 3, 4, 5, 6, 7, 8})

// conn is a ServeConn driven by a host over in-memory pipes.
type conn struct {
	*splashtooltest.Host
	t      *testing.T
	served chan error // ServeConn's return value
}

// serve runs ServeConn on a goroutine; cleanup closes the host's side and
// waits for ServeConn and the host's reader, so goleak sees nothing left.
func serve(t *testing.T, h splashtool.Handler, opts ...splashtool.Option) *conn {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	host, err := splashtooltest.NewHost(session, testKey, inW, outR)
	if err != nil {
		t.Fatal(err)
	}
	c := &conn{Host: host, t: t, served: make(chan error, 1)}
	go func() {
		err := splashtool.ServeConn(context.Background(), inR, outW, session, testKey, h, opts...)
		// Later host writes fail instead of blocking; the host's reader
		// sees the end of the tool's output.
		inR.CloseWithError(io.ErrClosedPipe)
		outW.Close()
		c.served <- err
	}()
	t.Cleanup(func() {
		inW.Close()
		select {
		case err := <-c.served:
			c.served <- err
		case <-time.After(patience):
			t.Error("ServeConn did not return")
		}
		select {
		case <-host.Done():
		case <-time.After(patience):
			t.Error("host reader did not stop")
		}
	})
	return c
}

func (c *conn) send(msg protocol.WorkerMessage) { c.t.Helper(); c.MustSend(c.t, msg) }

func (c *conn) next() protocol.WorkerMessage { c.t.Helper(); return c.MustNext(c.t, patience) }

// end closes the tool's input and returns ServeConn's answer.
func (c *conn) end() error {
	c.t.Helper()
	_ = c.CloseInput()
	return c.wait()
}

func (c *conn) wait() error {
	c.t.Helper()
	select {
	case err := <-c.served:
		c.served <- err
		return err
	case <-time.After(patience):
		c.t.Fatal("ServeConn did not return")
		return nil
	}
}

// expectClosed checks that the tool wrote nothing more.
func (c *conn) expectClosed() {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	if m, err := c.Next(ctx); !errors.Is(err, splashtooltest.ErrClosed) {
		c.t.Fatalf("want end of output, got %+v, %v", m, err)
	}
}

func invoke(id, text string) protocol.WorkerMessage {
	return protocol.InvokeMessage(protocol.Invoke{
		RequestID: id, Tool: toolName, Input: protocol.TextPayload(text),
		CallIndex: 1, Attempt: 1, AttemptLimit: 3, IdempotencyKey: "op-" + id, OutputLimit: 1 << 20,
	})
}

func cancelMsg(id string) protocol.WorkerMessage {
	return protocol.CancelMessage(protocol.Cancel{RequestID: id, Tool: toolName, Attempt: 1, IdempotencyKey: "op-" + id})
}

func wantResult(t *testing.T, m protocol.WorkerMessage, id string, status protocol.ResultStatus) *protocol.Result {
	t.Helper()
	if m.Kind != protocol.KindResult || m.Result.RequestID != id || m.Result.Status != status {
		t.Fatalf("want %s result for %s, got %s %+v", status, id, m.Kind, m.Result)
	}
	return m.Result
}

func wantDisposition(t *testing.T, m protocol.WorkerMessage, id string, d protocol.CancelDisposition) {
	t.Helper()
	if m.Kind != protocol.KindCancelDisposition || m.CancelDisp.RequestID != id || m.CancelDisp.Disposition != d ||
		m.CancelDisp.Attempt != 1 {
		t.Fatalf("want %s for %s, got %s %+v", d, id, m.Kind, m.CancelDisp)
	}
}

func wantChunk(t *testing.T, m protocol.WorkerMessage, id string, seq uint64, text string) {
	t.Helper()
	if m.Kind != protocol.KindChunk || *m.Chunk != (protocol.Chunk{RequestID: id, Sequence: seq, Text: text}) {
		t.Fatalf("want chunk %d %q of %s, got %s %+v", seq, text, id, m.Kind, m.Chunk)
	}
}
