package benchharness

import (
	"context"
	"crypto/rand"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/splashfabric/splashfabric/hosttrace"
	"github.com/splashfabric/splashfabric/httpapi"
	"github.com/splashfabric/splashfabric/tracing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/hostloop"
	"github.com/splashfabric/splashfabric/hostnats"
	"github.com/splashfabric/splashfabric/idempotency"
	"github.com/splashfabric/splashfabric/internal/tooltest"
	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/toolspec"
	"github.com/splashfabric/splashfabric/workeragent"
	"github.com/splashfabric/splashfabric/workflow"
)

// NoopTool is the tool the end-to-end runner calls: its handler returns its
// input at once, so what is measured is the path, not the work.
const NoopTool = "bench.noop"

// NoopScript is the script every end-to-end operation runs. It is the same
// text for every operation, as one automation submitted many times is, so
// the host compiles it once; operations are told apart by session id.
const NoopScript = `const r = await tool.start("` + NoopTool + `", "x"); r`

// FabricOptions shape the end-to-end runner.
type FabricOptions struct {
	// Idempotent registers the tool as idempotent, so workers take the
	// journal's fast path (no claim before running, the first result
	// stored); otherwise every call is claimed in the journal first.
	Idempotent bool
	// Concurrency bounds the calls one worker runs at once; zero picks 256.
	Concurrency int
	// Security is what the server protects; the zero value is plaintext
	// clients and an unencrypted store.
	Security Security
	// Archive gives the host its session archive, as `splash host` has
	// always run; Durable gives it the ledger besides, so every session
	// can outlive the host process.
	Archive, Durable bool
	// Unbatched stores each durable session's ledger writes on their
	// own, as hosts did before appends were batched per loop step: the
	// baseline of the batching.
	Unbatched bool
	// Traced traces every session end to end, sampled at 1.0: a span
	// for its submission, the host's spans (package hosttrace) and the
	// worker's, exported over OTLP/HTTP (see tracedProvider).
	Traced bool
}

// Fabric is the whole path as a [NewRunner]: each operation is one script
// session running [NoopScript] through hostloop.Loop.Submit; the loop claims
// and publishes the sealed invocation over a hostnats.HostTransport, a
// workeragent.Agent pulls it, consults its KV journal, runs the no-op
// handler, stores the result and publishes the sealed terminal event; the
// transport verifies it and the loop completes the script, which the
// runner sees through the loop's Observer. Everything runs against one
// in-process server started through internal/natstest.
func Fabric(o FabricOptions) NewRunner {
	if o.Concurrency <= 0 {
		o.Concurrency = 256
	}
	return func(b *testing.B, workers int, complete func(id uint64)) RoundTripper {
		return newFabricRunner(b, o, workers, complete)
	}
}

type fabricRunner struct {
	loop *hostloop.Loop
	srv  *benchServer

	// mu guards ids and early: a session can finish before Submit has
	// recorded which operation it is.
	mu       sync.Mutex
	ids      map[hostloop.SessionID]uint64
	early    map[hostloop.SessionID]struct{}
	complete func(uint64)
	// tracer, when traced, starts each submission's span.
	tracer trace.Tracer
}

const benchHostID = "bench"

func newFabricRunner(b *testing.B, o FabricOptions, workers int, complete func(uint64)) *fabricRunner {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv := startServer(b, o.Security)
	key, err := protocol.GenerateSessionKey(rand.Reader)
	must(b, err)
	fcfg := fabric.DefaultConfig()
	hostNC := srv.connect()
	hostJS, err := jetstream.New(hostNC)
	must(b, err)
	must(b, fabric.Provision(ctx, hostJS, fcfg))
	tr, err := hostnats.NewHostTransport(ctx, hostNC, fcfg, benchHostID, key, hostnats.WithEventBuffer(4096))
	must(b, err)
	r := &fabricRunner{srv: srv, ids: make(map[hostloop.SessionID]uint64), early: make(map[hostloop.SessionID]struct{}), complete: complete}
	// The host and every worker hold the one definition.
	noop := tooltest.Tool(b, toolspec.Spec{Name: NoopTool, Description: "benchmark no-op", Idempotent: o.Idempotent})
	cfg := hostloop.LoopConfig{
		Transport: tr,
		HostID:    benchHostID,
		Catalog:   func(rt *host.Runtime) error { return rt.RegisterTool(noop) },
		Observer:  (*completions)(r),
	}
	var tp trace.TracerProvider
	if o.Traced {
		tp = tracedProvider(b)
		r.tracer = tp.Tracer("github.com/splashfabric/splashfabric/internal/benchharness")
		cfg.Observer = httpapi.Tee((*completions)(r), hosttrace.New(tp))
	}
	var archive *hostnats.SessionArchive
	if o.Archive || o.Durable {
		archive, err = hostnats.NewSessionArchive(ctx, hostNC, fcfg, key)
		must(b, err)
		cfg.Archive = archive
	}
	if o.Durable {
		ledger, err := hostnats.NewLedgerLog(ctx, hostNC, fcfg, key)
		must(b, err)
		cfg.Ledger = ledger
		if o.Unbatched {
			// Only the workflow.Log methods: no batches, no rewrites.
			cfg.Ledger = struct{ workflow.Log }{ledger}
		}
	}
	r.loop, err = hostloop.StartLoop(cfg)
	if err != nil {
		_ = tr.Close()
		b.Fatal(err)
	}
	b.Cleanup(func() {
		r.loop.Stop()
		_ = tr.Close()
		if archive != nil {
			_ = archive.Close()
		}
	})
	for i := range workers {
		startFabricWorker(b, srv, fcfg, key, fmt.Sprintf("w%d", i+1), noop, o.Concurrency, tp)
	}
	return r
}

func startFabricWorker(b *testing.B, srv *benchServer, fcfg fabric.Config, key protocol.SessionKey, id string, def *toolspec.Tool, concurrency int, tp trace.TracerProvider) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nc := srv.connect()
	js, err := jetstream.New(nc)
	must(b, err)
	j, err := idempotency.NewKV(ctx, js, idempotency.KVConfig{})
	must(b, err)
	a, err := workeragent.New(nc, workeragent.Config{WorkerID: id, Key: key, Fabric: fcfg, Journal: j, Tracer: tp})
	must(b, err)
	noop := workeragent.HandlerFunc(func(_ context.Context, c *workeragent.Call) (workeragent.Output, error) {
		return workeragent.Result(c.Input.Text), nil
	})
	must(b, a.HandleTool(def, noop, workeragent.Concurrency(concurrency)))
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(runCtx) }()
	// Registered after Connect's close of nc, so it runs first.
	b.Cleanup(func() {
		stop()
		<-done
	})
	select {
	case <-a.Ready():
	case err := <-done:
		b.Fatalf("worker %s: Run = %v", id, err)
	case <-ctx.Done():
		b.Fatalf("worker %s not ready", id)
	}
}

func (r *fabricRunner) Submit(id uint64) error {
	sub := hostloop.Submission{Source: NoopScript}
	var span trace.Span
	if r.tracer != nil {
		// As the API does: the submission is a span, the session's parent.
		_, span = r.tracer.Start(context.Background(), "POST /v1/sessions", trace.WithSpanKind(trace.SpanKindServer))
		sub.Trace = tracing.TraceParent(span.SpanContext())
	}
	s, err := r.loop.Submit(context.Background(), sub)
	if span != nil {
		span.End()
	}
	if err != nil {
		return err
	}
	r.mu.Lock()
	if _, done := r.early[s.ID]; done {
		delete(r.early, s.ID)
		r.mu.Unlock()
		r.complete(id)
		return nil
	}
	r.ids[s.ID] = id
	r.mu.Unlock()
	return nil
}

// Close leaves teardown to the cleanups registered at construction.
func (r *fabricRunner) Close() {}

// completions is the runner seen as the loop's Observer; only finished
// sessions matter to it.
type completions fabricRunner

func (c *completions) SessionChanged(s hostloop.SessionStatus) {
	if s.State != hostloop.SessionCompleted {
		return
	}
	r := (*fabricRunner)(c)
	r.mu.Lock()
	id, ok := r.ids[s.ID]
	if !ok {
		r.early[s.ID] = struct{}{}
		r.mu.Unlock()
		return
	}
	delete(r.ids, s.ID)
	r.mu.Unlock()
	r.complete(id)
}

func (*completions) OperationChanged(hostloop.SessionID, hostloop.OperationStatus) {}
func (*completions) Chunk(hostloop.SessionID, host.ExternalToolStreamChunk)        {}
func (*completions) Audit(hostloop.SessionID, []host.AuditEvent)                   {}
func (*completions) Dispatched(hostloop.SessionID, host.ExternalInvocation)        {}
func (*completions) Rejected(string, error)                                        {}

func (r *fabricRunner) serverMessages() (in, out int64) { return r.srv.serverMessages() }
