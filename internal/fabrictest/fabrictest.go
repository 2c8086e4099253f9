// Package fabrictest holds what the tests of the two NATS-facing packages,
// fabric and hostnats, build their cases from: a provisioned server, keys,
// valid messages, and frames sealed around a Codec's checks so a test can
// send what a Codec would refuse to seal.
package fabrictest

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
	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/protocol"
)

// Key seals the tests' frames; OtherKey is a key their peers do not hold.
var (
	Key      = protocol.SessionKeyFromArray([protocol.AuthTagBytes]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32})
	OtherKey = protocol.SessionKeyFromArray([protocol.AuthTagBytes]byte{9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9})
)

// Tool is the tool of the tests' invocations and answers.
const Tool = "text.remote"

// Ctx is a context for one test's calls to the server, ended with it.
func Ctx(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Scale(20*time.Second))
	t.Cleanup(cancel)
	return ctx
}

// Env is a provisioned server with one client connection.
type Env struct {
	Srv *natstest.Server
	NC  *nats.Conn
	JS  jetstream.JetStream
	Cfg fabric.Config
}

// NewEnv starts a server, connects to it and provisions the fabric's
// streams and buckets with fabric.DefaultConfig.
func NewEnv(t testing.TB) *Env {
	t.Helper()
	srv := natstest.Start(t)
	nc := srv.Connect()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	cfg := fabric.DefaultConfig()
	if err := fabric.Provision(Ctx(t), js, cfg); err != nil {
		t.Fatal(err)
	}
	return &Env{Srv: srv, NC: nc, JS: js, Cfg: cfg}
}

// NewCodec is fabric.NewCodec, failing the test on error.
func NewCodec(t testing.TB, keys protocol.Keys) *fabric.Codec {
	t.Helper()
	c, err := fabric.NewCodec(keys)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Invoke is a valid invocation of Tool for request req.
func Invoke(req string, attempt uint32) protocol.Invoke {
	return protocol.Invoke{
		RequestID:      req,
		Tool:           Tool,
		Input:          protocol.TextPayload("hello"),
		CallIndex:      1,
		Attempt:        attempt,
		AttemptLimit:   3,
		IdempotencyKey: "key-" + req,
		OutputLimit:    1024,
	}
}

// Result is a valid success answering Invoke(req, attempt).
func Result(req string, attempt uint32) protocol.Result {
	p := protocol.TextPayload("done")
	return protocol.Result{RequestID: req, Attempt: attempt, Status: protocol.ResultSucceeded, Payload: &p}
}

// WantErrIs fails the test unless got matches every one of want, or,
// with no want (or a nil first one), unless got is nil.
func WantErrIs(t testing.TB, got error, want ...error) {
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

// Frame seals msg as a raw frame, around the Codec's checks.
func Frame(t testing.TB, key protocol.SessionKey, session string, role protocol.SessionRole, seq uint64, msg protocol.WorkerMessage) *nats.Msg {
	t.Helper()
	f, err := protocol.SealFrame(key, session, role, seq, msg)
	if err != nil {
		t.Fatal(err)
	}
	return fabric.FrameMsg(f)
}

// Tamper returns m with one byte of its payload changed ("hello" becomes
// "jello").
func Tamper(m *nats.Msg) *nats.Msg {
	out := &nats.Msg{Header: m.Header, Data: bytes.Clone(m.Data)}
	i := bytes.Index(out.Data, []byte("hello"))
	out.Data[i] = 'j'
	return out
}

// SealReconciled seals status as a worker's answer to req under key.
func SealReconciled(t testing.TB, key protocol.SessionKey, req protocol.OperationReconcileRequest, status protocol.OperationStatus) *nats.Msg {
	t.Helper()
	res, err := protocol.NewOperationReconcileResult(req.SessionID, req.RequestID, req.Tool, req.OperationKey, status)
	if err != nil {
		t.Fatal(err)
	}
	data, err := NewCodec(t, key).SealReconciled(res)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
