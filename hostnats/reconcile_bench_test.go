package hostnats_test

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/hostnats"
	"github.com/splashfabric/splashfabric/internal/fabrictest"
	"github.com/splashfabric/splashfabric/protocol"
)

// BenchmarkReconcile is one reconciliation round trip on an embedded
// server: seal, request, a worker that opens the request and seals a
// succeeded answer, and the host's checks of it.
func BenchmarkReconcile(b *testing.B) {
	env := fabrictest.NewEnv(b)
	srv, nc, cfg := env.Srv, env.NC, env.Cfg
	ctx := context.Background()
	tr, err := hostnats.NewHostTransport(ctx, nc, cfg, "h1", fabrictest.Key)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = tr.Close() }()
	worker := srv.Connect()
	codec := fabrictest.NewCodec(b, fabrictest.Key)
	payload := protocol.TextPayload("done")
	sub, err := worker.QueueSubscribe(fabric.ReconcileSubject(reconcileTool), "workers", func(m *nats.Msg) {
		req, err := codec.OpenReconcile(m.Header, m.Data)
		if err != nil {
			return
		}
		res, err := protocol.NewOperationReconcileResult(req.SessionID, req.RequestID, req.Tool, req.OperationKey, protocol.StatusSucceeded(payload))
		if err != nil {
			return
		}
		data, err := codec.SealReconciled(res)
		if err != nil {
			return
		}
		_ = m.RespondMsg(data)
	})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := worker.Flush(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		res, err := tr.Reconcile(ctx, "session-1", reconcileTool, "op-a")
		if err != nil || res.Status.State != protocol.OperationSucceeded {
			b.Fatalf("Reconcile = %+v, %v", res, err)
		}
	}
}
