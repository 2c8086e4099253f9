package itest

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	natsconf "github.com/splashfabric/splashfabric/deploy/nats"
	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/hostloop"
	"github.com/splashfabric/splashfabric/hostnats"
	"github.com/splashfabric/splashfabric/idempotency"
	"github.com/splashfabric/splashfabric/internal/natstest"
	"github.com/splashfabric/splashfabric/internal/pooltest"
	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/internal/tooltest"
	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/toolspec"
	"github.com/splashfabric/splashfabric/workeragent"
)

// poolFabric is a host and two worker pools on a node running the
// deployment's users and permissions (deploy/nats/splash.conf, one nkey
// user per pool), each party with its own identity and its own inbox
// prefix: the host as the host user with the host's ring and every pool's,
// each pool's workers with their nkey and ring only.
type poolFabric struct {
	t      *testing.T
	srv    *natstest.Server
	cfg    fabric.Config
	loop   *hostloop.Loop
	tr     *hostnats.HostTransport
	tools  *toolspec.Set // every pool's, each naming its pool
	pools  map[string]*pooltest.Pool
	poolOf map[string]string

	mu     sync.Mutex
	counts map[string]float64
}

const poolHostID = "ph"

// startPoolFabric serves tools, each in the pool its definition names.
func startPoolFabric(t *testing.T, tools *toolspec.Set) *poolFabric {
	t.Helper()
	f := &poolFabric{t: t, tools: tools, pools: pooltest.PoolsOf(t, tools), poolOf: map[string]string{}, counts: map[string]float64{}}
	for _, tool := range tools.Tools() {
		f.poolOf[tool.Name()] = tool.Pool()
	}
	users, err := natsconf.Users(map[string]string{natsconf.UserHost: "host-pw", natsconf.UserOps: "ops-pw"}, pooltest.NATSPools(t, f.pools))
	must(t, err)
	opts := &server.Options{}
	must(t, opts.ProcessConfigString(users))
	base := natstest.Options(t.TempDir())
	opts.Host, opts.Port, opts.NoLog, opts.NoSigs, opts.JetStream, opts.StoreDir = base.Host, base.Port, true, true, true, base.StoreDir
	f.srv = natstest.StartWith(t, opts)

	f.cfg = fabric.DefaultConfig()
	f.cfg.AckWait = 2 * time.Second
	hostNC := f.srv.Connect(nats.UserInfo(natsconf.UserHost, "host-pw"), nats.CustomInboxPrefix(fabric.InboxPrefix(natsconf.UserHost)))
	js, err := jetstream.New(hostNC)
	must(t, err)
	ctx, cancel := opCtx()
	defer cancel()
	must(t, fabric.Provision(ctx, js, f.cfg))
	must(t, fabric.EnsureToolConsumers(ctx, js, f.cfg, tools.Names()))
	hostKey, err := protocol.GenerateSessionKey(nil)
	must(t, err)
	f.tr, err = hostnats.NewHostTransport(ctx, hostNC, f.cfg, poolHostID, hostKey,
		hostnats.WithPoolKeys(pooltest.Rings(f.pools), func(tool string) string { return f.poolOf[tool] }),
		hostnats.WithRejectHandler(func(reason, _ string, _ error) { f.count(reason) }))
	must(t, err)
	f.loop, err = hostloop.StartLoop(hostloop.LoopConfig{
		Transport: f.tr,
		HostID:    poolHostID,
		Observer:  rejectCounter{f},
		Catalog:   func(rt *host.Runtime) error { return rt.RegisterTools(f.tools) },
	})
	if err != nil {
		_ = f.tr.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		f.loop.Stop()
		_ = f.tr.Close()
	})
	return f
}

// tool is the definition of the tool named name, as the host holds it.
func (f *poolFabric) tool(name string) *toolspec.Tool {
	f.t.Helper()
	return tooltest.Lookup(f.t, f.tools, name)
}

func (f *poolFabric) count(reason string) {
	f.mu.Lock()
	f.counts[reason]++
	f.mu.Unlock()
}

// startWorker runs an agent of pool, as `splash worker --pool` wires one:
// the pool's nkey and ring, its own journal bucket, binding only.
func (f *poolFabric) startWorker(pool string, register func(*workeragent.Agent)) *workeragent.Agent {
	t := f.t
	t.Helper()
	p := f.pools[pool]
	v := &natstestViolations{}
	nc := f.srv.Connect(append(p.ConnectOptions(t), nats.ErrorHandler(v.handle))...)
	js, err := jetstream.New(nc)
	must(t, err)
	ctx, cancel := opCtx()
	defer cancel()
	j, err := idempotency.NewKV(ctx, js, idempotency.KVConfig{Bucket: fabric.JournalBucket(pool), Key: p.Ring})
	must(t, err)
	a, err := workeragent.New(nc, workeragent.Config{
		WorkerID: "w-" + pool, Key: p.Ring, Pool: pool, Fabric: f.cfg, Journal: j, BindOnly: true,
		LeaseDuration: time.Second, HeartbeatInterval: 200 * time.Millisecond, DrainGrace: 300 * time.Millisecond,
	})
	must(t, err)
	register(a)
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(runCtx) }()
	t.Cleanup(func() {
		stop()
		testwait.Receive(t, 30*time.Second, "worker of "+pool+" to stop", done)
		if errs := v.snapshot(); len(errs) > 0 {
			t.Errorf("the workers of pool %s met permission violations: %q", pool, errs)
		}
	})
	select {
	case <-a.Ready():
	case err := <-done:
		t.Fatalf("worker of %s: Run = %v (violations %q)", pool, err, v.snapshot())
	case <-time.After(testwait.DefaultTimeout):
		t.Fatalf("worker of %s not ready (violations %q)", pool, v.snapshot())
	}
	return a
}

// natstestViolations records the asynchronous errors of a connection.
type natstestViolations struct {
	mu   sync.Mutex
	errs []string
}

func (v *natstestViolations) handle(_ *nats.Conn, _ *nats.Subscription, err error) {
	v.mu.Lock()
	v.errs = append(v.errs, err.Error())
	v.mu.Unlock()
}

func (v *natstestViolations) snapshot() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]string(nil), v.errs...)
}

// rejectCounter counts the loop's refusals with the transport's.
type rejectCounter struct{ f *poolFabric }

func (rejectCounter) SessionChanged(hostloop.SessionStatus)                         {}
func (rejectCounter) OperationChanged(hostloop.SessionID, hostloop.OperationStatus) {}
func (rejectCounter) Chunk(hostloop.SessionID, host.ExternalToolStreamChunk)        {}
func (rejectCounter) Audit(hostloop.SessionID, []host.AuditEvent)                   {}
func (rejectCounter) Dispatched(hostloop.SessionID, host.ExternalInvocation)        {}
func (r rejectCounter) Rejected(reason string, _ error)                             { r.f.count(reason) }

// The pooltest.Host of the in-process fabric: its loop.

func (f *poolFabric) Submit(ctx context.Context, source string) (string, error) {
	s, err := f.loop.Submit(ctx, hostloop.Submission{Source: source})
	return string(s.ID), err
}

func (f *poolFabric) Operations(ctx context.Context, session string) ([]pooltest.Operation, error) {
	s, _, err := f.loop.Status(ctx, hostloop.SessionID(session))
	if err != nil {
		return nil, err
	}
	var out []pooltest.Operation
	for _, op := range s.Operations {
		out = append(out, pooltest.Operation{RequestID: op.RequestID, Tool: op.Tool, Attempt: op.Attempt})
	}
	return out, nil
}

func (f *poolFabric) Final(ctx context.Context, session string) (string, error) {
	for {
		s, _, err := f.loop.Status(ctx, hostloop.SessionID(session))
		if err != nil {
			return "", err
		}
		switch s.State {
		case hostloop.SessionCompleted:
			return s.Value, nil
		case hostloop.SessionSuspended:
		default:
			return "", errors.New(string(s.State) + ": " + s.Error)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (f *poolFabric) AuthFailures(context.Context) (map[string]float64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string]float64, len(f.counts))
	for k, v := range f.counts {
		out[k] = v
	}
	return out, nil
}

// TestPoolIsolation runs the attack table with the real credentials and
// ring of one pool ("text", serving it.upper) against the deployed
// permissions, a host holding every pool's ring and a second pool
// ("demo", serving it.wait): every move is refused by the NATS node or by
// the host and counted, the genuine answer of the other pool's call wins,
// and the attacker's own tool keeps working. The workers of both pools,
// wired as `splash worker --pool` wires them, meet no permission
// violation of their own.
func TestPoolIsolation(t *testing.T) {
	f := startPoolFabric(t, tooltest.Set(t,
		// Idempotent: its answers go to answer subjects, its pool's own.
		toolspec.Spec{Name: "it.upper", Pool: "text", Idempotent: true},
		toolspec.Spec{Name: "it.wait", Pool: "demo"}))
	text, demo := f.pools["text"], f.pools["demo"]
	release := make(chan struct{})
	var once sync.Once
	f.startWorker("text", func(a *workeragent.Agent) {
		must(t, a.HandleTool(f.tool("it.upper"), workeragent.HandlerFunc(func(_ context.Context, c *workeragent.Call) (workeragent.Output, error) {
			return workeragent.Result(strings.ToUpper(c.Input.Text)), nil
		})))
	})
	f.startWorker("demo", func(a *workeragent.Agent) {
		must(t, a.HandleTool(f.tool("it.wait"), workeragent.HandlerFunc(func(ctx context.Context, c *workeragent.Call) (workeragent.Output, error) {
			select {
			case <-release:
				return workeragent.Result("waited " + c.Input.Text), nil
			case <-ctx.Done():
				return workeragent.Output{}, ctx.Err()
			}
		})))
	})
	pooltest.Run(t, pooltest.Fabric{
		URL:      f.srv.ClientURL(),
		HostID:   poolHostID,
		Host:     f,
		Attacker: text,
		Own:      pooltest.Call{Tool: "it.upper", Input: "mine", Want: "MINE"},
		Victim:   demo,
		Target:   pooltest.Call{Tool: "it.wait", Input: "for it", Want: "waited for it"},
		Release:  func() { once.Do(func() { close(release) }) },
	})
}
