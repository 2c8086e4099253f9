package hostnats_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/internal/natstest"
	"github.com/splashfabric/splashfabric/protocol"
)

var (
	testKey  = protocol.SessionKeyFromArray([protocol.AuthTagBytes]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32})
	otherKey = protocol.SessionKeyFromArray([protocol.AuthTagBytes]byte{9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9})
)

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// fabricEnv is a provisioned server with one client connection.
type fabricEnv struct {
	srv *natstest.Server
	nc  *nats.Conn
	js  jetstream.JetStream
	cfg fabric.Config
}

func newEnv(t *testing.T) *fabricEnv {
	t.Helper()
	srv := natstest.Start(t)
	nc := srv.Connect()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	cfg := fabric.DefaultConfig()
	if err := fabric.Provision(testCtx(t), js, cfg); err != nil {
		t.Fatal(err)
	}
	return &fabricEnv{srv: srv, nc: nc, js: js, cfg: cfg}
}

func newCodec(t testing.TB, key protocol.SessionKey) *fabric.Codec {
	t.Helper()
	c, err := fabric.NewCodec(key)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// testTool is the tool of the tests' invocations and answers.
const testTool = "text.remote"

func validInvoke(req string, attempt uint32) protocol.Invoke {
	return protocol.Invoke{
		RequestID:      req,
		Tool:           testTool,
		Input:          protocol.TextPayload("hello"),
		CallIndex:      1,
		Attempt:        attempt,
		AttemptLimit:   3,
		IdempotencyKey: "key-" + req,
		OutputLimit:    1024,
	}
}

func validResult(req string, attempt uint32) protocol.Result {
	p := protocol.TextPayload("done")
	return protocol.Result{RequestID: req, Attempt: attempt, Status: protocol.ResultSucceeded, Payload: &p}
}

func wantErrIs(t *testing.T, got error, want ...error) {
	t.Helper()
	if len(want) == 0 || want[0] == nil {
		if got != nil {
			t.Fatalf("err = %v, want nil", got)
		}
		return
	}
	for _, w := range want {
		if !errors.Is(got, w) {
			t.Fatalf("err = %v, want errors.Is %v", got, w)
		}
	}
}

// mustFrame seals msg as a raw frame, bypassing the Codec's checks, so a
// test can send what a Codec would refuse to seal.
func mustFrame(t *testing.T, key protocol.SessionKey, session string, role protocol.SessionRole, seq uint64, msg protocol.WorkerMessage) *nats.Msg {
	t.Helper()
	f, err := protocol.SealFrame(key, session, role, seq, msg)
	if err != nil {
		t.Fatal(err)
	}
	return fabric.FrameMsg(f)
}

// tamper flips one byte of a frame's payload ("hello" becomes "jello").
func tamper(m *nats.Msg) *nats.Msg {
	out := &nats.Msg{Header: m.Header, Data: bytes.Clone(m.Data)}
	i := bytes.Index(out.Data, []byte("hello"))
	out.Data[i] = 'j'
	return out
}
