package e2e_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/splashfabric/splashfabric/demotools"
	natsconf "github.com/splashfabric/splashfabric/deploy/nats"
	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/hostloop"
	"github.com/splashfabric/splashfabric/hostnats"
	"github.com/splashfabric/splashfabric/idempotency"
	"github.com/splashfabric/splashfabric/internal/natstest"
	"github.com/splashfabric/splashfabric/internal/pooltest"
	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/toolspec"
	"github.com/splashfabric/splashfabric/workeragent"
)

// These tests load deploy/nats/splash.conf into an in-process server (the
// same nats-server code `splash nats --config` runs) and check that each
// user can do exactly its part of the fabric. They need no Docker engine.

// Test passwords; the deployment generates its own (deploy/compose).
var testPasswords = map[string]string{
	"SPLASH_NATS_ROUTE_PASSWORD": "route-secret",
	"SPLASH_NATS_HOST_PASSWORD":  "host-secret",
	"SPLASH_NATS_OPS_PASSWORD":   "ops-secret",
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

// demoPools are the pools of the demo catalog (docs/catalog.md: "demo"
// and "text"), each with fresh credentials.
func demoPools(t testing.TB) map[string]*pooltest.Pool {
	t.Helper()
	return pooltest.PoolsOf(t, demotools.Definitions())
}

// startConfiguredNode runs a single node from the deployment's NATS config
// with a user for each of pools, as `splash nats --config splash.conf
// --pools pools.json` runs a node. The cluster block is dropped (a lone
// node has no routes) and the ports are free ones; accounts, users and
// permissions are the file's.
func startConfiguredNode(t *testing.T, pools map[string]*pooltest.Pool) *natstest.Server {
	t.Helper()
	for k, v := range testPasswords {
		t.Setenv(k, v)
	}
	setDeployTLSEnv(t)
	raw, err := os.ReadFile(filepath.Join(repoRoot(t), "deploy", "nats", "splash.conf"))
	if err != nil {
		t.Fatal(err)
	}
	text, err := natsconf.Render(string(raw), pooltest.NATSPools(t, pools))
	if err != nil {
		t.Fatalf("deploy/nats/splash.conf with pools: %v", err)
	}
	opts := &server.Options{}
	if err := opts.ProcessConfigString(text); err != nil {
		t.Fatalf("deploy/nats/splash.conf with pools: %v", err)
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

// connectAs opens a connection as a password user, with its inbox prefix,
// and returns it with the recorder of its permission violations.
func connectAs(t *testing.T, srv *natstest.Server, user string) (*nats.Conn, *natstest.Violations) {
	t.Helper()
	v := &natstest.Violations{}
	pw := testPasswords["SPLASH_NATS_"+strings.ToUpper(user)+"_PASSWORD"]
	nc := srv.Connect(nats.UserInfo(user, pw), nats.ErrorHandler(v.Handler), nats.Name(user), nats.CustomInboxPrefix(fabric.InboxPrefix(user)))
	return nc, v
}

// connectPool opens a connection with a pool's nkey and inbox prefix.
func connectPool(t *testing.T, srv *natstest.Server, p *pooltest.Pool) (*nats.Conn, *natstest.Violations) {
	t.Helper()
	v := &natstest.Violations{}
	nc := srv.Connect(append(p.ConnectOptions(t), nats.ErrorHandler(v.Handler), nats.Name("pool "+p.Name))...)
	return nc, v
}

func TestNATSConfigRefusesUnauthenticated(t *testing.T) {
	pools := demoPools(t)
	srv := startConfiguredNode(t, pools)
	stranger := pooltest.NewPool(t, "stranger", "x")
	cases := []struct {
		name string
		opts []nats.Option
	}{
		{"anonymous", nil},
		{"unknown user", []nats.Option{nats.UserInfo("intruder", "x")}},
		{"the retired worker user", []nats.Option{nats.UserInfo("worker", "worker-secret")}},
		{"host with wrong password", []nats.Option{nats.UserInfo("host", "wrong")}},
		{"route credentials as a client", []nats.Option{nats.UserInfo("route", testPasswords["SPLASH_NATS_ROUTE_PASSWORD"])}},
		{"token", []nats.Option{nats.Token("host-secret")}},
		{"an nkey of no pool", stranger.ConnectOptions(t)[:1]},
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

// fabricRig is a host transport and a worker agent for each demo pool,
// each on its own identity.
type fabricRig struct {
	host       *hostnats.HostTransport
	archive    *hostnats.SessionArchive
	hostViol   *natstest.Violations
	workerViol map[string]*natstest.Violations
	opsJS      jetstream.JetStream
	agents     map[string]*workeragent.Agent
	pools      map[string]*pooltest.Pool
}

const permHostID = "perm-host"

func newFabricRig(t *testing.T, srv *natstest.Server, pools map[string]*pooltest.Pool) *fabricRig {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testwait.Scale(30*time.Second))
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
	if err := fabric.EnsureToolConsumers(ctx, hjs, cfg, demotools.Definitions().Names()); err != nil {
		t.Fatalf("host makes the pool consumers: %v (violations %q)", err, hv.Snapshot())
	}
	poolOf := func(tool string) string {
		if d, err := demotools.Definition(tool); err == nil {
			return d.Pool()
		}
		return tool
	}
	tr, err := hostnats.NewHostTransport(ctx, hnc, cfg, permHostID, key, hostnats.WithPoolKeys(pooltest.Rings(pools), poolOf))
	if err != nil {
		t.Fatalf("host transport: %v (violations %q)", err, hv.Snapshot())
	}
	t.Cleanup(func() { _ = tr.Close() })
	archive, err := hostnats.NewSessionArchive(ctx, hnc, cfg, key)
	if err != nil {
		t.Fatalf("session archive: %v (violations %q)", err, hv.Snapshot())
	}
	t.Cleanup(func() { _ = archive.Close() })

	rig := &fabricRig{host: tr, archive: archive, hostViol: hv, workerViol: map[string]*natstest.Violations{},
		agents: map[string]*workeragent.Agent{}, pools: pools}
	for name, p := range pools {
		wnc, wv := connectPool(t, srv, p)
		rig.workerViol[name] = wv
		wjs, err := jetstream.New(wnc)
		if err != nil {
			t.Fatal(err)
		}
		journal, err := idempotency.NewKV(ctx, wjs, idempotency.KVConfig{Bucket: fabric.JournalBucket(name), Key: p.Ring})
		if err != nil {
			t.Fatalf("pool %s journal: %v (violations %q)", name, err, wv.Snapshot())
		}
		// BindOnly, as the compose workers run (--provision=false): a
		// pool may not create or update the fabric's streams or its
		// consumers.
		agent, err := workeragent.New(wnc, workeragent.Config{WorkerID: "perm-" + name, Key: p.Ring, Pool: name, Fabric: cfg, Journal: journal, BindOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, tool := range p.Tools {
			d, err := demotools.Definition(tool)
			if err != nil {
				t.Fatal(err)
			}
			set, _ := toolspec.NewSet(d)
			if tool == demotools.Ledger {
				err = demotools.RegisterLedgerFrom(agent, d, wjs, 1)
			} else {
				err = demotools.RegisterFrom(agent, set, tool)
			}
			if err != nil {
				t.Fatal(err)
			}
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
			t.Fatalf("pool %s Run: %v (violations %q)", name, runErr, wv.Snapshot())
		case <-time.After(testwait.Scale(30 * time.Second)):
			t.Fatalf("pool %s not ready (violations %q)", name, wv.Snapshot())
		}
		rig.agents[name] = agent
	}

	onc, _ := connectAs(t, srv, "ops")
	ojs, err := jetstream.New(onc)
	if err != nil {
		t.Fatal(err)
	}
	rig.opsJS = ojs
	return rig
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
	deadline := time.After(testwait.Scale(30 * time.Second))
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

// TestNATSConfigLetsEachRoleWork runs the real host transport and a worker
// agent of each demo pool, each on its own identity: invocations, chunks,
// results, the journal, the ledger's KV, a cancellation and a
// reconciliation all go through, and no connection hears of a single
// permission violation.
func TestNATSConfigLetsEachRoleWork(t *testing.T) {
	pools := demoPools(t)
	srv := startConfiguredNode(t, pools)
	rig := newFabricRig(t, srv, pools)
	ctx := t.Context()
	demo := rig.agents["demo"]

	echo := invocation(1, demotools.Echo, "hello")
	ledger := invocation(2, demotools.Ledger, "")
	stream := invocation(3, demotools.Stream, "3")
	stream.Stream = &protocol.StreamLimits{
		MaxChunks: demotools.StreamMaxChunks, MaxChunkBytes: demotools.StreamMaxChunkBytes,
		MaxSourceBytes: demotools.StreamMaxSourceBytes, MaxReleasedBytes: demotools.StreamMaxReleasedBytes,
	}
	upper := invocation(5, "demo.upper", "loud")
	for _, inv := range []protocol.Invoke{echo, ledger, stream, upper} {
		if err := rig.host.Publish(ctx, inv); err != nil {
			t.Fatalf("publish %s: %v", inv.Tool, err)
		}
		ev := awaitEvent(t, rig.host, inv.Tool+" result", resultOf(inv.RequestID))
		if r := ev.Message.Result; r.Status != protocol.ResultSucceeded {
			t.Fatalf("%s: result %+v", inv.Tool, r)
		}
		if ev.Tool != inv.Tool {
			t.Fatalf("%s: the answer came sealed for %q", inv.Tool, ev.Tool)
		}
	}

	// A retry of the ledger call under the same idempotency key is a new
	// message: the worker answers it from its pool's journal (a direct
	// get on splash_idempotency_pool_demo) instead of running the effect
	// again.
	retry := ledger
	retry.Attempt = 2
	retry.AttemptLimit = 2
	if err := rig.host.Publish(ctx, retry); err != nil {
		t.Fatal(err)
	}
	awaitEvent(t, rig.host, "ledger retry answered", resultOf(retry.RequestID))
	testwait.Until(t, 30*time.Second, "journal replay", func() bool { return demo.Stats().DedupeHits >= 1 })

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
	testwait.Until(t, 30*time.Second, "stored answer replayed", func() bool { return demo.Stats().DedupeHits >= 2 })

	// A reconciliation: the pool answers on the host's private inbox.
	res, err := rig.host.Reconcile(ctx, "session-1", demotools.Ledger, ledger.IdempotencyKey)
	if err != nil || res.Status.State != protocol.OperationSucceeded {
		t.Fatalf("reconcile: %+v, %v", res, err)
	}

	// A long sleep, cancelled: the worker reads the cancel record of its
	// pool from KV or hears the broadcast, and answers with a disposition.
	sleep := invocation(4, demotools.Sleep, "1m")
	if err := rig.host.Publish(ctx, sleep); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, 30*time.Second, "sleep running", func() bool { return demo.Stats().Received >= 6 })
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
	for name, v := range rig.workerViol {
		if v := v.Snapshot(); len(v) > 0 {
			t.Errorf("pool %s violations: %q", name, v)
		}
	}
	if v := rig.hostViol.Snapshot(); len(v) > 0 {
		t.Errorf("host violations: %q", v)
	}
}

// TestNATSConfigConfinesRoles checks that what the host and ops users may
// not do is refused by the server, each refusal reported as a permission
// violation naming the subject. (What a pool may not do is the attack
// table of internal/pooltest, which internal/itest runs against these
// permissions and e2e against the compose cluster.)
func TestNATSConfigConfinesRoles(t *testing.T) {
	pools := demoPools(t)
	srv := startConfiguredNode(t, pools)
	newFabricRig(t, srv, pools)
	type op struct {
		user, what, subject string
		sub                 bool // subscribe rather than publish
	}
	cases := []op{
		{"host", "forge an answer", fabric.EventsSubject(permHostID, demotools.Echo), false},
		{"host", "store an answer", fabric.AnswerSubject(permHostID, demotools.Echo, "k"), false},
		{"host", "write a pool's journal", "$KV." + fabric.JournalBucket("demo") + ".abc", false},
		{"host", "write the catalog", "$KV." + fabric.BucketCatalog + ".demo.echo", false},
		{"host", "subscribe to every inbox", "_INBOX.>", true},
		{"host", "subscribe to a pool's inbox", fabric.InboxPrefix(fabric.PoolIdentity("demo")) + ".>", true},
		{"host", "subscribe to invocations", "splash.invoke.>", true},
		{"host", "listen for reconciliation requests", "splash.reconcile.>", true},
		{"ops", "forge an answer", fabric.EventsSubject(permHostID, demotools.Echo), false},
		{"ops", "publish an invocation", "splash.invoke.demo.echo", false},
		{"ops", "broadcast a cancellation", "splash.cancel.demo.sleep", false},
		{"ops", "send a reconciliation request", "splash.reconcile.demo.echo", false},
		{"ops", "subscribe to every inbox", "_INBOX.>", true},
		{"ops", "subscribe to invocations", "splash.invoke.>", true},
		{"ops", "subscribe to answers", "splash.events.>", true},
	}
	conns := map[string]*nats.Conn{}
	viols := map[string]*natstest.Violations{}
	for _, u := range []string{"host", "ops"} {
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
}

// TestNATSConfigWorkerWaitsForTheHost: a pool's worker that only binds
// (--provision=false) on a fabric no host has provisioned yet stops with
// workeragent.ErrNotProvisioned, having asked nothing its identity may not
// ask, and creates nothing.
func TestNATSConfigWorkerWaitsForTheHost(t *testing.T) {
	pools := demoPools(t)
	srv := startConfiguredNode(t, pools)
	ctx, cancel := context.WithTimeout(t.Context(), testwait.Scale(30*time.Second))
	defer cancel()
	demo := pools["demo"]
	wnc, wv := connectPool(t, srv, demo)
	wjs, err := jetstream.New(wnc)
	if err != nil {
		t.Fatal(err)
	}
	journal, err := idempotency.NewKV(ctx, wjs, idempotency.KVConfig{Bucket: fabric.JournalBucket("demo")})
	if err != nil {
		t.Fatalf("worker journal: %v (violations %q)", err, wv.Snapshot())
	}
	agent, err := workeragent.New(wnc, workeragent.Config{WorkerID: "early-worker", Key: demo.Ring, Pool: "demo", Journal: journal, BindOnly: true})
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
