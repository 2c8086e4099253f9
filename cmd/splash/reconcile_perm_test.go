package main

import (
	"context"
	"crypto/rand"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/splashfabric/splashfabric/demotools"
	natsconf "github.com/splashfabric/splashfabric/deploy/nats"
	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/hostnats"
	"github.com/splashfabric/splashfabric/internal/natstest"
	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/metrics"
	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/toolspec"
)

// TestReconcileUnderTheDeployedPermissions: under the users of
// deploy/nats/splash.conf, a host asks a tool's pool on
// splash.reconcile.<tool> and a worker of the pool, wired as `splash
// worker` wires it, answers on the request's reply subject, sealed with
// the pool's ring. A worker may not send a reconciliation request, nor
// publish to an inbox it was not asked on; a host may not listen on the
// reconcile subjects, so it cannot stand in for a worker.
func TestReconcileUnderTheDeployedPermissions(t *testing.T) {
	srv, pw, pools := startDevNATS(t)
	ctx, cancel := context.WithTimeout(t.Context(), testwait.Scale(30*time.Second))
	defer cancel()
	demo := pool(t, pools, "demo")
	key, err := protocol.GenerateSessionKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := fabricConfig(1, 0)
	if err != nil {
		t.Fatal(err)
	}
	hv := &natstest.Violations{}
	host := connectDev(t, srv, natsconf.UserHost, pw[natsconf.UserHost], nats.ErrorHandler(hv.Handler))
	hjs, err := jetstream.New(host)
	if err != nil {
		t.Fatal(err)
	}
	if err := fabric.Provision(ctx, hjs, cfg); err != nil {
		t.Fatalf("the host user provisions: %v", err)
	}
	if err := fabric.EnsureToolConsumers(ctx, hjs, cfg, []string{"demo.echo"}); err != nil {
		t.Fatalf("the host user makes the pool consumer: %v", err)
	}

	wv := &natstest.Violations{}
	wnc := connectPool(t, srv, demo, nats.ErrorHandler(wv.Handler))
	echo, err := demotools.Definition("demo.echo")
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	w, err := newWorker(ctx, workerParts{
		nc: wnc, key: demo.ring, workerID: "perm-worker", pool: demo.name, fabric: cfg, tools: []*toolspec.Tool{echo},
		bindOnly: true, metrics: metrics.NewWorker(reg, metrics.WithTools("demo.echo")), records: metrics.NewRecords(nil),
		log: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- w.run(runCtx) }()
	defer func() {
		stop()
		if err := testwait.Receive(t, 0, "the worker to stop", ran); err != nil {
			t.Errorf("worker: %v", err)
		}
	}()
	testwait.Receive(t, 0, "the worker ready", w.agent.Ready())

	tr, err := hostnats.NewHostTransport(ctx, host, cfg, "perm-host", key,
		hostnats.WithPoolKeys(map[string]protocol.Keys{demo.name: demo.ring}, func(string) string { return demo.name }))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tr.Close() }()
	res, err := tr.Reconcile(ctx, "session-1", "demo.echo", "sk1-never-dispatched")
	if err != nil {
		t.Fatalf("the host asks, the worker answers: %v", err)
	}
	if res.Status.State != protocol.OperationUnknown {
		t.Fatalf("status = %+v", res.Status)
	}
	// The worker counts an answer once it is sent, so the count can
	// follow the reply the host has read already.
	testwait.Until(t, 0, "splash_worker_reconciliations_total{unknown} to be 1", func() bool {
		return counterValue(t, reg, "splash_worker_reconciliations_total", map[string]string{"tool": "demo.echo", "status": "unknown"}) == 1
	})

	for _, tc := range []struct {
		who     string
		nc      *nats.Conn
		v       *natstest.Violations
		what    string
		subject string
		sub     bool
	}{
		{"worker", wnc, wv, "send a reconciliation request", fabric.ReconcileSubject("demo.echo"), false},
		{"worker", wnc, wv, "publish to an inbox it was not asked on", "_INBOX_host.unasked", false},
		{"host", host, hv, "listen for reconciliation requests", "splash.reconcile.>", true},
	} {
		t.Run(tc.who+" may not "+tc.what, func(t *testing.T) {
			if tc.sub {
				if _, err := tc.nc.SubscribeSync(tc.subject); err != nil {
					t.Fatal(err)
				}
			} else if err := tc.nc.Publish(tc.subject, []byte("{}")); err != nil {
				t.Fatal(err)
			}
			if err := tc.nc.Flush(); err != nil {
				t.Fatal(err)
			}
			testwait.Until(t, 10*time.Second, "permission violation for "+tc.subject, func() bool { return tc.v.Has(tc.subject) })
		})
	}
}

// counterValue reads one counter sample from reg, 0 while it has none.
func counterValue(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	next:
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if want, ok := labels[l.GetName()]; ok && want != l.GetValue() {
					continue next
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}
