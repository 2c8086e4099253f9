package e2e_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/internal/natstest"
	"github.com/splashfabric/splashfabric/internal/testwait"
)

// TestClusterNATS brings up the three NATS nodes of docker-compose.yml
// alone and checks the cluster the host and workers will use: anonymous
// clients are refused, the host provisions the fabric at three replicas
// that are all current, a worker may not publish invocations, and the
// streams keep accepting writes with one node stopped.
func TestClusterNATS(t *testing.T) {
	s := newStack(t)
	s.up(-1, "n1", "n2", "n3")

	if nc, err := nats.Connect(s.natsURLs(), nats.NoReconnect(), s.tls()); err == nil {
		nc.Close()
		t.Fatal("anonymous client connected")
	} else if !strings.Contains(strings.ToLower(err.Error()), "authorization violation") {
		t.Fatalf("anonymous connect: %v, want an authorization violation", err)
	}

	hnc, err := s.connect("host")
	if err != nil {
		t.Fatalf("connect as host: %v", err)
	}
	hjs, err := jetstream.New(hnc)
	if err != nil {
		t.Fatal(err)
	}
	cfg := fabric.DefaultConfig()
	cfg.Replicas = clusterReplicas
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := fabric.Provision(ctx, hjs, cfg); err != nil {
		t.Fatalf("provision at 3 replicas: %v", err)
	}
	ojs := s.opsJS()
	for _, name := range []string{fabric.StreamInvoke, fabric.StreamEvents, "KV_" + fabric.BucketCancel} {
		testwait.Until(t, time.Minute, name+" replicated on three current nodes", func() bool {
			st, err := ojs.Stream(ctx, name)
			if err != nil {
				return false
			}
			info, err := st.Info(ctx)
			if err != nil || info.Cluster == nil || info.Cluster.Leader == "" || len(info.Cluster.Replicas) != 2 {
				return false
			}
			for _, r := range info.Cluster.Replicas {
				if !r.Current || r.Offline {
					return false
				}
			}
			return true
		})
	}

	v := &natstest.Violations{}
	wnc, err := s.connectPool("demo", nats.ErrorHandler(v.Handler))
	if err != nil {
		t.Fatalf("connect as the pool demo: %v", err)
	}
	if err := wnc.Publish("splash.invoke.demo.ledger", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	_ = wnc.Flush()
	testwait.Until(t, 10*time.Second, "the pool refused publishing an invocation", func() bool {
		return v.Has("splash.invoke.demo.ledger")
	})

	// One node down: a three-replica stream keeps its quorum.
	s.mustCompose("stop", "--timeout", "5", "n3")
	publish := func(what string) {
		t.Helper()
		pctx, pcancel := context.WithTimeout(ctx, testwait.Scale(20*time.Second))
		defer pcancel()
		for {
			_, err := hjs.Publish(pctx, "splash.invoke.e2e.probe", []byte(what))
			if err == nil {
				return
			}
			if pctx.Err() != nil {
				t.Fatalf("publish %s: %v", what, err)
			}
		}
	}
	publish("with n3 stopped")
	s.mustCompose("start", "n3")
	s.waitHealthy(2 * time.Minute)
	publish("with n3 back")
	st, err := ojs.Stream(ctx, fabric.StreamInvoke)
	if err != nil {
		t.Fatal(err)
	}
	if n := st.CachedInfo().State.Msgs; n != 2 {
		t.Fatalf("%s holds %d messages, want 2", fabric.StreamInvoke, n)
	}
}
