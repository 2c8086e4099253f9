package main

import (
	"context"
	"fmt"
	"go.opentelemetry.io/otel/trace"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/splashfabric/splashfabric/demotools"
	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/idempotency"
	"github.com/splashfabric/splashfabric/internal/ratelog"
	"github.com/splashfabric/splashfabric/metrics"
	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/toolspec"
	"github.com/splashfabric/splashfabric/workeragent"
)

// workerParts is what newWorker needs.
type workerParts struct {
	nc       *nats.Conn
	key      protocol.Keys
	workerID string
	// pool is the pool every tool belongs to; "" for a worker of several
	// pools, which keeps the shared journal.
	pool        string
	fabric      fabric.Config
	tools       []*toolspec.Tool
	concurrency int // per built-in tool; 0 keeps each tool's default
	drainGrace  time.Duration
	bindOnly    bool // workeragent.Config.BindOnly
	metrics     *metrics.Worker
	// records counts journal records refused for failing authentication.
	records *metrics.Records
	log     *slog.Logger
	// processes are the worker's settings for its process tools.
	processes workeragent.ProcessSettings
	// tracer traces the worker's calls; nil traces nothing.
	tracer trace.TracerProvider
}

// worker is an agent with its metrics.
type worker struct {
	agent *workeragent.Agent
	tools []string
	m     *metrics.Worker
}

// The worker's metrics are told of everything the agent and its
// supervisors do, as it happens.
var _ workeragent.Observer = (*metrics.Worker)(nil)

// newWorker builds an agent serving p.tools: process tools under their
// supervisors, the others with their built-in handlers.
func newWorker(ctx context.Context, p workerParts) (*worker, error) {
	js, err := jetstream.New(p.nc)
	if err != nil {
		return nil, fmt.Errorf("%w: jetstream: %v", errStart, err)
	}
	// Journal records are sealed with the pool's key ring: one that
	// fails (a write by a NATS client without the key) is refused,
	// counted and logged at a bounded rate, never replayed.
	rejectLog := ratelog.New(p.log, time.Second, 5)
	journal, err := idempotency.NewKV(ctx, js, idempotency.KVConfig{
		// The pool's own bucket, which no other pool may read or write.
		Bucket:   fabric.JournalBucket(p.pool),
		TTL:      p.fabric.DedupeHorizon,
		Replicas: p.fabric.Replicas,
		Key:      p.key,
		OnReject: func(reason string) {
			p.records.Rejected(metrics.StoreJournal, reason)
			rejectLog.Warn("record "+reason, "stored record rejected", "store", metrics.StoreJournal, "reason", reason)
		},
	})
	if err != nil {
		return nil, fmt.Errorf("%w: journal: %v", errStart, err)
	}
	agent, err := workeragent.New(p.nc, workeragent.Config{
		WorkerID: p.workerID,
		Key:      p.key,
		Pool:     p.pool,
		Fabric:   p.fabric,
		Journal:  journal,
		// Three reports of progress per ack wait, so one lost report
		// does not hand a running call to another worker.
		HeartbeatInterval: min(workeragent.DefaultHeartbeatInterval, p.fabric.AckWait/3),
		DrainGrace:        p.drainGrace,
		BindOnly:          p.bindOnly,
		Logger:            p.log,
		Observer:          p.metrics,
		Processes:         p.processes,
		Tracer:            p.tracer,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: agent: %v", errStart, err)
	}
	w := &worker{agent: agent, m: p.metrics}
	r := &concurrencyRegistrar{agent: agent, concurrency: p.concurrency}
	for _, t := range p.tools {
		w.tools = append(w.tools, t.Name())
		switch {
		case t.Spec().Process != nil || t.Spec().MCP != nil:
			err = agent.HandleTool(t, nil)
		case t.Name() == demotools.Ledger:
			err = demotools.RegisterLedgerFrom(r, t, js, p.fabric.Replicas)
		default:
			set, _ := toolspec.NewSet(t)
			err = demotools.RegisterFrom(r, set, t.Name())
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %v", errStart, err)
		}
	}
	return w, nil
}

// run runs the agent until ctx ends, then drains it (workeragent's
// DrainGrace), keeping the up and serving gauges current meanwhile.
func (w *worker) run(ctx context.Context) error {
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		w.watch(ctx, stop)
	}()
	err := w.agent.Run(ctx)
	close(stop)
	wg.Wait()
	return err
}

// watch marks the worker up and serving once the agent is consuming, and
// down when its context ends or the agent stopped.
func (w *worker) watch(ctx context.Context, stop <-chan struct{}) {
	setServing := func(on bool) {
		w.m.SetUp(on)
		for _, t := range w.tools {
			w.m.Serving(t, on)
		}
	}
	ready := w.agent.Ready()
	done := ctx.Done()
	for {
		select {
		case <-ready:
			ready = nil
			setServing(true)
		case <-done:
			done = nil
			setServing(false)
		case <-stop:
			setServing(false)
			return
		}
	}
}

// concurrencyRegistrar applies the worker's --concurrency to every
// built-in tool it registers.
type concurrencyRegistrar struct {
	agent       *workeragent.Agent
	concurrency int
}

func (r *concurrencyRegistrar) HandleTool(t *toolspec.Tool, h workeragent.Handler, opts ...workeragent.ToolOption) error {
	if r.concurrency > 0 {
		opts = append(opts, workeragent.Concurrency(r.concurrency))
	}
	return r.agent.HandleTool(t, h, opts...)
}

// workerMux serves /metrics and /healthz for a worker.
func workerMux(metricsHandler http.Handler) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", metricsHandler)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"ok"}` + "\n"))
	})
	return mux
}
