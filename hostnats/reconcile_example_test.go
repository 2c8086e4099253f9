package hostnats_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/hostnats"
	"github.com/splashfabric/splashfabric/internal/natstest"
	"github.com/splashfabric/splashfabric/protocol"
)

// A host asks a tool's pool what became of an operation; the example plays
// the worker, which answers from what it knows of the operation key.
func ExampleHostTransport_Reconcile() {
	dir, err := os.MkdirTemp("", "reconcile-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	srv, err := server.NewServer(natstest.Options(dir))
	if err != nil {
		panic(err)
	}
	srv.Start()
	defer srv.WaitForShutdown()
	defer srv.Shutdown()
	if !srv.ReadyForConnections(10 * time.Second) {
		panic("server not ready")
	}
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		panic(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx := context.Background()
	cfg := fabric.DefaultConfig()
	if err := fabric.Provision(ctx, js, cfg); err != nil {
		panic(err)
	}
	key := protocol.SessionKeyFromArray([protocol.AuthTagBytes]byte{7})

	// The worker: one of the pool answers each request.
	codec, _ := fabric.NewCodec(key)
	sub, err := nc.QueueSubscribe(fabric.ReconcileSubject("text.remote"), "workers", func(m *nats.Msg) {
		req, err := codec.OpenReconcile(m.Header, m.Data)
		if err != nil {
			return // unauthenticated: never answered
		}
		status := protocol.StatusUnknown()
		if req.OperationKey == "sk1-done" {
			status = protocol.StatusSucceeded(protocol.TextPayload("released"))
		}
		res, _ := protocol.NewOperationReconcileResult(req.SessionID, req.RequestID, req.Tool, req.OperationKey, status)
		data, _ := codec.SealReconciled(res)
		_ = m.RespondMsg(data)
	})
	if err != nil {
		panic(err)
	}
	defer func() { _ = sub.Unsubscribe() }()

	// The host.
	tr, err := hostnats.NewHostTransport(ctx, nc, cfg, "h1", key)
	if err != nil {
		panic(err)
	}
	defer func() { _ = tr.Close() }()
	for _, op := range []string{"sk1-done", "sk1-lost"} {
		res, err := tr.Reconcile(ctx, "session-1", "text.remote", op)
		if err != nil {
			panic(err)
		}
		if res.Status.Payload != nil {
			fmt.Println(res.OperationKey, res.Status.State, res.Status.Payload.Text)
			continue
		}
		fmt.Println(res.OperationKey, res.Status.State)
	}
	// Output:
	// sk1-done succeeded released
	// sk1-lost unknown
}
