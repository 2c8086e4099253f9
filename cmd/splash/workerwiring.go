package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/splashfabric/splashfabric/demotools"
	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/idempotency"
	"github.com/splashfabric/splashfabric/metrics"
	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/workeragent"
)

// statsInterval is how often a worker copies its agent's counters into
// the metrics; Prometheus scrapes every 15s, so a second is plenty.
const statsInterval = time.Second

// allDemoTools is what a worker serves without --tools: every demo tool,
// the JetStream-backed ledger included.
func allDemoTools() []string { return append(demotools.Names(), demotools.Ledger) }

// checkTools refuses names that are not demo tools, before anything
// connects.
func checkTools(tools []string) error {
	known := allDemoTools()
	for _, t := range tools {
		if !slices.Contains(known, t) {
			return fmt.Errorf("%w: --tools: unknown tool %q (known: %s)", errUsage, t, strings.Join(known, ", "))
		}
	}
	return nil
}

// workerParts is what newWorker needs.
type workerParts struct {
	nc          *nats.Conn
	key         protocol.SessionKey
	workerID    string
	fabric      fabric.Config
	tools       []string
	concurrency int // per tool; 0 keeps each tool's default
	drainGrace  time.Duration
	bindOnly    bool // workeragent.Config.BindOnly
	metrics     *metrics.Worker
	log         *slog.Logger
}

// worker is an agent with its metrics.
type worker struct {
	agent *workeragent.Agent
	tools []string
	m     *metrics.Worker
}

// newWorker builds an agent serving p.tools from the demo tools. Unknown
// names are a usage error, found before anything is registered.
func newWorker(ctx context.Context, p workerParts) (*worker, error) {
	if err := checkTools(p.tools); err != nil {
		return nil, err
	}
	js, err := jetstream.New(p.nc)
	if err != nil {
		return nil, fmt.Errorf("%w: jetstream: %v", errStart, err)
	}
	journal, err := idempotency.NewKV(ctx, js, idempotency.KVConfig{
		TTL:      p.fabric.DedupeHorizon,
		Replicas: p.fabric.Replicas,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: journal: %v", errStart, err)
	}
	agent, err := workeragent.New(p.nc, workeragent.Config{
		WorkerID:   p.workerID,
		Key:        p.key,
		Fabric:     p.fabric,
		Journal:    journal,
		DrainGrace: p.drainGrace,
		BindOnly:   p.bindOnly,
		Logger:     p.log,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: agent: %v", errStart, err)
	}
	r := &meteredRegistrar{agent: agent, m: p.metrics, concurrency: p.concurrency}
	var plain []string
	for _, t := range p.tools {
		if t == demotools.Ledger {
			if err := demotools.RegisterLedger(r, js, p.fabric.Replicas); err != nil {
				return nil, fmt.Errorf("%w: %v", errStart, err)
			}
			continue
		}
		plain = append(plain, t)
	}
	if len(plain) > 0 {
		if err := demotools.Register(r, plain...); err != nil {
			return nil, fmt.Errorf("%w: %v", errStart, err)
		}
	}
	return &worker{agent: agent, tools: p.tools, m: p.metrics}, nil
}

// run runs the agent until ctx ends, then drains it (workeragent's
// DrainGrace), keeping the metrics current meanwhile.
func (w *worker) run(ctx context.Context) error {
	var wg sync.WaitGroup
	stopStats := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		w.watch(ctx, stopStats)
	}()
	err := w.agent.Run(ctx)
	close(stopStats)
	wg.Wait()
	return err
}

// watch marks the worker up and serving once the agent is consuming, down
// when its context ends, and copies the agent's counters into the metrics
// until stop is closed. The agent reports dedupe hits, redeliveries and
// forged frames only as process totals, so with more than one tool they
// are recorded under the tool label "other".
func (w *worker) watch(ctx context.Context, stop <-chan struct{}) {
	tool := metrics.Other
	if len(w.tools) == 1 {
		tool = w.tools[0]
	}
	var last workeragent.Stats
	copyStats := func() {
		s := w.agent.Stats()
		for range s.DedupeHits - last.DedupeHits {
			w.m.DedupeHit(tool)
		}
		for range s.Redeliveries - last.Redeliveries {
			w.m.Redelivered(tool)
		}
		for range s.Forged - last.Forged {
			w.m.AuthFailure(metrics.AuthBadTag)
		}
		last = s
	}
	setServing := func(on bool) {
		w.m.SetUp(on)
		for _, t := range w.tools {
			w.m.Serving(t, on)
		}
	}
	tick := time.NewTicker(statsInterval)
	defer tick.Stop()
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
		case <-tick.C:
			copyStats()
		case <-stop:
			copyStats()
			setServing(false)
			return
		}
	}
}

// meteredRegistrar registers handlers on an agent wrapped so that each run
// feeds the in-flight gauge, the invocation counter and the handler
// duration, and applies the worker's --concurrency to every tool.
type meteredRegistrar struct {
	agent       *workeragent.Agent
	m           *metrics.Worker
	concurrency int
}

func (r *meteredRegistrar) Handle(name string, h workeragent.Handler, opts ...workeragent.ToolOption) error {
	if r.concurrency > 0 {
		opts = append(opts, workeragent.Concurrency(r.concurrency))
	}
	return r.agent.Handle(name, meteredHandler(name, h, r.m), opts...)
}

// meteredHandler wraps h with the worker's handler metrics.
func meteredHandler(tool string, h workeragent.Handler, m *metrics.Worker) workeragent.Handler {
	return workeragent.HandlerFunc(func(ctx context.Context, call *workeragent.Call) (workeragent.Output, error) {
		m.HandlerStarted(tool)
		start := time.Now()
		out, err := h.HandleCall(ctx, call)
		m.HandlerDone(tool, handlerOutcome(err), time.Since(start))
		return out, err
	})
}

// handlerOutcome maps a handler's error to the outcome label, following
// how the agent turns it into a result: a plain error is transient.
func handlerOutcome(err error) string {
	var (
		ack  *workeragent.CancelAcknowledgedError
		perm *workeragent.PermanentError
		rl   *workeragent.RateLimitedError
	)
	switch {
	case err == nil:
		return metrics.HandlerSucceeded
	case errors.As(err, &ack):
		return metrics.HandlerCancelled
	case errors.As(err, &perm):
		return metrics.HandlerFailed
	case errors.As(err, &rl):
		return metrics.HandlerRetryRateLimited
	default:
		return metrics.HandlerRetryTransient
	}
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
