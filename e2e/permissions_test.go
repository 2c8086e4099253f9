package e2e_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/splashfabric/splashfabric/demotools"
	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/hostloop"
	"github.com/splashfabric/splashfabric/hostnats"
	"github.com/splashfabric/splashfabric/idempotency"
	"github.com/splashfabric/splashfabric/internal/natstest"
	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/workeragent"
)

// These tests load deploy/nats/splash.conf into an in-process server (the
// same nats-server code `splash nats --config` runs) and check that each
// user can do exactly its part of the fabric. They need no Docker engine.

// Test passwords; the deployment generates its own (deploy/compose).
var testPasswords = map[string]string{
	"SPLASH_NATS_ROUTE_PASSWORD":  "route-secret",
	"SPLASH_NATS_HOST_PASSWORD":   "host-secret",
	"SPLASH_NATS_WORKER_PASSWORD": "worker-secret",
	"SPLASH_NATS_OPS_PASSWORD":    "ops-secret",
}

// repoRoot is the checkout this test file lives in.
func repoRoot(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("no caller information")
	}
	return filepath.Dir(filepath.Dir(file))
}

// startConfiguredNode runs a single node from the deployment's NATS config.
// The cluster block is dropped (a lone node has no routes) and the ports
// are free ones; accounts, users and permissions are the file's.
func startConfiguredNode(t *testing.T) *natstest.Server {
	t.Helper()
	for k, v := range testPasswords {
		t.Setenv(k, v)
	}
	setDeployTLSEnv(t)
	opts, err := server.ProcessConfigFile(filepath.Join(repoRoot(t), "deploy", "nats", "splash.conf"))
	if err != nil {
		t.Fatalf("deploy/nats/splash.conf: %v", err)
	}
	opts.ServerName = "permissions-test"
	opts.Host = "127.0.0.1"
	opts.Port = -1
	opts.HTTPPort = 0
	opts.Cluster = server.ClusterOpts{}
	// Plain client connections: these tests are about permissions, and
	// TestNATSConfigTLS about the file's TLS.
	opts.TLSConfig = nil
	opts.StoreDir = t.TempDir()
	opts.NoLog = true
	opts.NoSigs = true
	return natstest.StartWith(t, opts)
}

// connectAs opens a connection as user and returns it with the recorder of
// its permission violations.
func connectAs(t *testing.T, srv *natstest.Server, user string) (*nats.Conn, *natstest.Violations) {
	t.Helper()
	v := &natstest.Violations{}
	pw := testPasswords["SPLASH_NATS_"+strings.ToUpper(user)+"_PASSWORD"]
	nc := srv.Connect(nats.UserInfo(user, pw), nats.ErrorHandler(v.Handler), nats.Name(user))
	return nc, v
}

func TestNATSConfigRefusesUnauthenticated(t *testing.T) {
	srv := startConfiguredNode(t)
	cases := []struct {
		name string
		opts []nats.Option
	}{
		{"anonymous", nil},
		{"unknown user", []nats.Option{nats.UserInfo("intruder", "x")}},
		{"worker with wrong password", []nats.Option{nats.UserInfo("worker", "wrong")}},
		{"route credentials as a client", []nats.Option{nats.UserInfo("route", testPasswords["SPLASH_NATS_ROUTE_PASSWORD"])}},
		{"token", []nats.Option{nats.Token("worker-secret")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opts := append([]nats.Option{nats.NoReconnect()}, tc.opts...)
			nc, err := nats.Connect(srv.ClientURL(), opts...)
			if err == nil {
				nc.Close()
				t.Fatal("connected")
			}
			if !strings.Contains(strings.ToLower(err.Error()), "authorization violation") {
				t.Fatalf("err = %v, want an authorization violation", err)
			}
		})
	}
}

// fabricRig is a host transport and a worker agent, each on its own user.
type fabricRig struct {
	host       *hostnats.HostTransport
	archive    *hostnats.SessionArchive
	hostViol   *natstest.Violations
	workerViol *natstest.Violations
	opsJS      jetstream.JetStream
	agent      *workeragent.Agent
}

const permHostID = "perm-host"

func newFabricRig(t *testing.T, srv *natstest.Server) *fabricRig {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	key, err := protocol.GenerateSessionKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	cfg := fabric.DefaultConfig()

	hnc, hv := connectAs(t, srv, "host")
	hjs, err := jetstream.New(hnc)
	if err != nil {
		t.Fatal(err)
	}
	if err := fabric.Provision(ctx, hjs, cfg); err != nil {
		t.Fatalf("host provisions: %v (violations %q)", err, hv.Snapshot())
	}
	tr, err := hostnats.NewHostTransport(ctx, hnc, cfg, permHostID, key)
	if err != nil {
		t.Fatalf("host transport: %v (violations %q)", err, hv.Snapshot())
	}
	t.Cleanup(func() { _ = tr.Close() })
	archive, err := hostnats.NewSessionArchive(ctx, hnc, cfg, key)
	if err != nil {
		t.Fatalf("session archive: %v (violations %q)", err, hv.Snapshot())
	}
	t.Cleanup(func() { _ = archive.Close() })

	wnc, wv := connectAs(t, srv, "worker")
	wjs, err := jetstream.New(wnc)
	if err != nil {
		t.Fatal(err)
	}
	journal, err := idempotency.NewKV(ctx, wjs, idempotency.KVConfig{Key: key})
	if err != nil {
		t.Fatalf("worker journal: %v (violations %q)", err, wv.Snapshot())
	}
	// BindOnly, as the compose workers run (--provision=false): the worker
	// user may not create or update the fabric's streams.
	agent, err := workeragent.New(wnc, workeragent.Config{WorkerID: "perm-worker", Key: key, Fabric: cfg, Journal: journal, BindOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := demotools.Register(agent); err != nil {
		t.Fatal(err)
	}
	if err := demotools.RegisterLedger(agent, wjs, 1); err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	var runErr error
	go func() {
		defer close(done)
		runErr = agent.Run(runCtx)
	}()
	t.Cleanup(func() {
		stop()
		testwait.Receive(t, 30*time.Second, "agent to stop", done)
		if runErr != nil && !strings.Contains(runErr.Error(), "context canceled") {
			t.Errorf("Run: %v", runErr)
		}
	})
	select {
	case <-agent.Ready():
	case <-done:
		t.Fatalf("worker Run: %v (violations %q)", runErr, wv.Snapshot())
	case <-time.After(30 * time.Second):
		t.Fatalf("worker not ready (violations %q)", wv.Snapshot())
	}

	onc, _ := connectAs(t, srv, "ops")
	ojs, err := jetstream.New(onc)
	if err != nil {
		t.Fatal(err)
	}
	return &fabricRig{host: tr, archive: archive, hostViol: hv, workerViol: wv, opsJS: ojs, agent: agent}
}

func invocation(n int, tool, input string) protocol.Invoke {
	return protocol.Invoke{
		RequestID: fmt.Sprintf("perm-req-%d", n), Tool: tool, Input: protocol.TextPayload(input),
		CallIndex: uint64(n), Attempt: 1, AttemptLimit: 1,
		IdempotencyKey: fmt.Sprintf("perm-session/call-%d", n), OutputLimit: 1 << 16,
	}
}

// awaitEvent returns the next event the host transport delivers that
// matches.
func awaitEvent(t *testing.T, tr *hostnats.HostTransport, what string, match func(hostloop.Event) bool) hostloop.Event {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case ev, ok := <-tr.Events():
			if !ok {
				t.Fatalf("events closed waiting for %s", what)
			}
			if ev.Kind == hostloop.EventPublishFailed {
				t.Fatalf("publish failed waiting for %s: %v", what, ev.Err)
			}
			if match(ev) {
				return ev
			}
		case <-deadline:
			t.Fatalf("no %s", what)
		}
	}
}

func resultOf(requestID string) func(hostloop.Event) bool {
	return func(ev hostloop.Event) bool {
		r := ev.Message.Result
		return ev.Message.Kind == protocol.KindResult && r != nil && r.RequestID == requestID
	}
}

// TestNATSConfigLetsEachRoleWork runs the real host transport and worker
// agent on the host and worker users: invocations, chunks, results, the
// journal, the ledger's KV and a cancellation all go through, and neither
// connection hears of a single permission violation.
func TestNATSConfigLetsEachRoleWork(t *testing.T) {
	srv := startConfiguredNode(t)
	rig := newFabricRig(t, srv)
	ctx := t.Context()

	echo := invocation(1, demotools.Echo, "hello")
	ledger := invocation(2, demotools.Ledger, "")
	stream := invocation(3, demotools.Stream, "3")
	stream.Stream = &protocol.StreamLimits{
		MaxChunks: demotools.StreamMaxChunks, MaxChunkBytes: demotools.StreamMaxChunkBytes,
		MaxSourceBytes: demotools.StreamMaxSourceBytes, MaxReleasedBytes: demotools.StreamMaxReleasedBytes,
	}
	for _, inv := range []protocol.Invoke{echo, ledger, stream} {
		if err := rig.host.Publish(ctx, inv); err != nil {
			t.Fatalf("publish %s: %v", inv.Tool, err)
		}
		ev := awaitEvent(t, rig.host, inv.Tool+" result", resultOf(inv.RequestID))
		if r := ev.Message.Result; r.Status != protocol.ResultSucceeded {
			t.Fatalf("%s: result %+v", inv.Tool, r)
		}
	}

	// A retry of the ledger call under the same idempotency key is a new
	// message: the worker answers it from its journal (a direct get on
	// splash_idempotency) instead of running the effect again.
	retry := ledger
	retry.Attempt = 2
	retry.AttemptLimit = 2
	if err := rig.host.Publish(ctx, retry); err != nil {
		t.Fatal(err)
	}
	awaitEvent(t, rig.host, "ledger retry answered", resultOf(retry.RequestID))
	testwait.Until(t, 30*time.Second, "journal replay", func() bool { return rig.agent.Stats().DedupeHits >= 1 })

	// A retry of the (idempotent) echo call: the worker reads the stored
	// answer back from its answer subject (a direct get on SPLASH_EVENTS)
	// and replays it.
	echoRetry := echo
	echoRetry.Attempt = 2
	echoRetry.AttemptLimit = 2
	if err := rig.host.Publish(ctx, echoRetry); err != nil {
		t.Fatal(err)
	}
	awaitEvent(t, rig.host, "echo retry answered", resultOf(echoRetry.RequestID))
	testwait.Until(t, 30*time.Second, "stored answer replayed", func() bool { return rig.agent.Stats().DedupeHits >= 2 })

	// A long sleep, cancelled: the worker reads the cancel record from KV
	// or hears the broadcast, and answers with a disposition.
	sleep := invocation(4, demotools.Sleep, "1m")
	if err := rig.host.Publish(ctx, sleep); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, 30*time.Second, "sleep running", func() bool { return rig.agent.Stats().Received >= 5 })
	if err := rig.host.Cancel(ctx, protocol.Cancel{RequestID: sleep.RequestID, Tool: sleep.Tool, Attempt: 1, IdempotencyKey: sleep.IdempotencyKey}); err != nil {
		t.Fatal(err)
	}
	awaitEvent(t, rig.host, "cancel disposition", func(ev hostloop.Event) bool {
		return ev.Message.Kind == protocol.KindCancelDisposition || resultOf(sleep.RequestID)(ev)
	})

	// The session archive: an incarnation and a terminal record written
	// and read back by the host user.
	inc := hostloop.Incarnation{ID: permHostID + "-0123456789ab", HostID: permHostID, Started: time.Now()}
	if err := rig.archive.Register(ctx, inc); err != nil {
		t.Fatalf("register incarnation: %v (violations %q)", err, rig.hostViol.Snapshot())
	}
	sid := hostloop.SessionID("s-" + inc.ID + "-1")
	rig.archive.Record(hostloop.SessionStatus{ID: sid, State: hostloop.SessionCompleted, Value: "1", Created: time.Now()})
	if err := rig.archive.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if st := rig.archive.Stats(); st.Stored != 1 {
		t.Fatalf("session archive stats %+v (violations %q)", st, rig.hostViol.Snapshot())
	}
	if _, err := rig.archive.Incarnation(ctx, inc.ID); err != nil {
		t.Fatalf("read incarnation: %v", err)
	}
	if _, err := rig.archive.Lookup(ctx, "s-"+permHostID+"-0123456789ab-2"); !errors.Is(err, hostloop.ErrUnknownSession) {
		t.Fatalf("read absent session record: %v (violations %q)", err, rig.hostViol.Snapshot())
	}

	counts, err := demotools.LedgerCounts(ctx, rig.opsJS)
	if err != nil {
		t.Fatal(err)
	}
	if counts[ledger.IdempotencyKey] != 1 || len(counts) != 1 {
		t.Fatalf("ledger counts %v", counts)
	}
	if v := rig.workerViol.Snapshot(); len(v) > 0 {
		t.Errorf("worker violations: %q", v)
	}
	if v := rig.hostViol.Snapshot(); len(v) > 0 {
		t.Errorf("host violations: %q", v)
	}
}

// TestNATSConfigConfinesRoles checks that what a role must not do is
// refused by the server, each refusal reported as a permission violation
// naming the subject.
func TestNATSConfigConfinesRoles(t *testing.T) {
	srv := startConfiguredNode(t)
	rig := newFabricRig(t, srv)
	_ = rig
	type op struct {
		user, what, subject string
		sub                 bool // subscribe rather than publish
	}
	cases := []op{
		{"worker", "publish an invocation", "splash.invoke.demo.echo", false},
		{"worker", "publish an invocation of a dotted tool", "splash.invoke.demo.json.sum", false},
		{"worker", "broadcast a cancellation", "splash.cancel.demo.sleep", false},
		{"worker", "send a reconciliation request", "splash.reconcile.demo.echo", false},
		{"worker", "write a cancel record", "$KV.splash_cancel.abc", false},
		{"worker", "delete the invocation stream", "$JS.API.STREAM.DELETE.SPLASH_INVOKE", false},
		{"worker", "purge the invocation stream", "$JS.API.STREAM.PURGE.SPLASH_INVOKE", false},
		{"worker", "delete an invocation", "$JS.API.STREAM.MSG.DELETE.SPLASH_INVOKE", false},
		{"worker", "read an invocation by sequence", "$JS.API.STREAM.MSG.GET.SPLASH_INVOKE", false},
		{"worker", "delete a pool consumer", "$JS.API.CONSUMER.DELETE.SPLASH_INVOKE.pool_demo_echo", false},
		{"worker", "create a consumer on the events stream", "$JS.API.CONSUMER.CREATE.SPLASH_EVENTS.spy", false},
		{"worker", "pull a host's events", "$JS.API.CONSUMER.MSG.NEXT.SPLASH_EVENTS.host_perm-host", false},
		{"worker", "ack a host's events", "$JS.ACK.SPLASH_EVENTS.host_perm-host.1.1.1.1.0", false},
		{"worker", "delete the events stream", "$JS.API.STREAM.DELETE.SPLASH_EVENTS", false},
		{"worker", "read an event by sequence", "$JS.API.STREAM.MSG.GET.SPLASH_EVENTS", false},
		{"worker", "read a host's events subject", "$JS.API.DIRECT.GET.SPLASH_EVENTS.splash.events.perm-host", false},
		{"worker", "direct get without a subject", "$JS.API.DIRECT.GET.SPLASH_EVENTS", false},
		{"worker", "create another stream", "$JS.API.STREAM.CREATE.EVIL", false},
		{"worker", "update the invocation stream", "$JS.API.STREAM.UPDATE.SPLASH_INVOKE", false},
		{"worker", "create the invocation stream", "$JS.API.STREAM.CREATE.SPLASH_INVOKE", false},
		{"worker", "update the events stream", "$JS.API.STREAM.UPDATE.SPLASH_EVENTS", false},
		{"worker", "create the events stream", "$JS.API.STREAM.CREATE.SPLASH_EVENTS", false},
		{"worker", "update the cancel bucket", "$JS.API.STREAM.UPDATE.KV_splash_cancel", false},
		{"worker", "create the cancel bucket", "$JS.API.STREAM.CREATE.KV_splash_cancel", false},
		{"worker", "list streams", "$JS.API.STREAM.NAMES", false},
		{"worker", "write another bucket", "$KV.other.key", false},
		{"worker", "write a session record", "$KV.splash_sessions.s.s-perm-host-0123456789ab-1", false},
		{"worker", "read a session record", "$JS.API.DIRECT.GET.KV_splash_sessions.$KV.splash_sessions.s.s-perm-host-0123456789ab-1", false},
		{"worker", "read the session bucket by sequence", "$JS.API.STREAM.MSG.GET.KV_splash_sessions", false},
		{"worker", "watch the session bucket", "$JS.API.CONSUMER.CREATE.KV_splash_sessions.spy", false},
		{"worker", "delete the session bucket", "$JS.API.STREAM.DELETE.KV_splash_sessions", false},
		{"worker", "subscribe to invocations", "splash.invoke.>", true},
		{"worker", "subscribe to other workers' chunks", "splash.chunks.>", true},
		{"worker", "subscribe to events", "splash.events.>", true},
		{"host", "forge a terminal event", "splash.events.perm-host", false},
		{"host", "forge a chunk", "splash.chunks.perm-host", false},
		{"host", "write the journal", "$KV.splash_idempotency.abc", false},
		{"host", "subscribe to invocations", "splash.invoke.>", true},
	}
	conns := map[string]*nats.Conn{}
	viols := map[string]*natstest.Violations{}
	for _, u := range []string{"host", "worker"} {
		conns[u], viols[u] = connectAs(t, srv, u)
	}
	for _, tc := range cases {
		t.Run(tc.user+" may not "+tc.what, func(t *testing.T) {
			nc := conns[tc.user]
			if tc.sub {
				if _, err := nc.SubscribeSync(tc.subject); err != nil {
					t.Fatal(err)
				}
			} else if err := nc.Publish(tc.subject, []byte("{}")); err != nil {
				t.Fatal(err)
			}
			if err := nc.Flush(); err != nil {
				t.Fatal(err)
			}
			testwait.Until(t, 10*time.Second, "permission violation for "+tc.subject, func() bool {
				return viols[tc.user].Has(tc.subject)
			})
		})
	}

	// A JetStream publish of an invocation by the worker gets no ack: the
	// message never reaches the stream.
	wjs, err := jetstream.New(conns["worker"])
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	if _, err := wjs.Publish(ctx, "splash.invoke.demo.ledger", []byte("{}")); err == nil {
		t.Fatal("worker JetStream-published an invocation")
	}
	s, err := rig.opsJS.Stream(t.Context(), fabric.StreamInvoke)
	if err != nil {
		t.Fatal(err)
	}
	if n := s.CachedInfo().State.Msgs; n != 0 {
		t.Fatalf("invocation stream holds %d messages, want 0", n)
	}
}

// TestNATSConfigWorkerWaitsForTheHost: a worker that only binds
// (--provision=false) on a fabric no host has provisioned yet stops with
// workeragent.ErrNotProvisioned, having asked nothing the worker user may
// not ask, and creates nothing.
func TestNATSConfigWorkerWaitsForTheHost(t *testing.T) {
	srv := startConfiguredNode(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	key, err := protocol.GenerateSessionKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	wnc, wv := connectAs(t, srv, "worker")
	wjs, err := jetstream.New(wnc)
	if err != nil {
		t.Fatal(err)
	}
	journal, err := idempotency.NewKV(ctx, wjs, idempotency.KVConfig{})
	if err != nil {
		t.Fatalf("worker journal: %v (violations %q)", err, wv.Snapshot())
	}
	agent, err := workeragent.New(wnc, workeragent.Config{WorkerID: "early-worker", Key: key, Journal: journal, BindOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := demotools.Register(agent, demotools.Echo); err != nil {
		t.Fatal(err)
	}
	if err := agent.Run(ctx); !errors.Is(err, workeragent.ErrNotProvisioned) {
		t.Fatalf("Run = %v, want ErrNotProvisioned", err)
	}
	if v := wv.Snapshot(); len(v) > 0 {
		t.Errorf("worker violations: %q", v)
	}
	onc, _ := connectAs(t, srv, "ops")
	ojs, err := jetstream.New(onc)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{fabric.StreamInvoke, fabric.StreamEvents} {
		if _, err := ojs.Stream(ctx, name); !errors.Is(err, jetstream.ErrStreamNotFound) {
			t.Errorf("stream %s after the worker gave up: %v, want not found", name, err)
		}
	}
}
