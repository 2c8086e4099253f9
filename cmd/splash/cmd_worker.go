package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/splashfabric/splashfabric/metrics"
	"github.com/splashfabric/splashfabric/workeragent"
)

var workerCommand = command{
	name:    "worker",
	summary: "run a worker serving tools from the invocation streams",
	help: `
Connects to NATS at --nats-url and pulls invocations of the tools in
--tools (default: every tool of --pool, or of the catalog), as --catalog
defines them (default: the demo tools). A tool with a process in the
catalog runs as a supervised child process in a Bubblewrap sandbox (as uid
65534, no capability, seccomp, limits; see docs/process-tools.md) unless its
entry says contain: false; the others must be built-in demo tools. No
sandbox may hold the worker's home, --key-file, --nats-nkey-file or
--nats-key: such a catalog is refused. A call without a deadline is stopped
after --tool-max-runtime. A worker of a pool (--pool) authenticates with the
pool's nkey (--nats-nkey-file), seals and verifies frames with the pool's
key ring (--key-file) and keeps the pool's own journal; every tool it serves
must be the pool's (docs/topology.md, "Pools"). An invocation made under
another definition of the tool than this worker's is refused. Runs up to
--concurrency calls of each built-in tool at once (a process tool: its
catalog concurrency). Serves /metrics and /healthz on --metrics-addr. On
SIGINT or SIGTERM it stops pulling, lets running calls finish for
--drain-grace, then cancels the rest and hands them back to the stream for
another worker; tool processes still running then are stopped and their
calls answered indeterminate.`,
	new: func() runner { return new(workerConfig) },
}

// workerConfig holds the flags of `splash worker`.
type workerConfig struct {
	nats        natsClientFlags
	keyFile     string
	pool        string
	catalog     string
	tools       []string
	workerID    string
	concurrency int
	metricsAddr string
	replicas    int
	drainGrace  time.Duration
	provision   bool
	ackWait     time.Duration
	sandbox     sandboxFlags
}

func (c *workerConfig) flags(fs *flagSet) {
	host, _ := os.Hostname()
	c.nats.register(fs)
	fs.stringVar(&c.keyFile, "key-file", envKeyFile, "", "key ring `file` of the worker's pool (or a bare 32-byte key as 64 hex digits)")
	fs.stringVar(&c.pool, "pool", envPool, "", "the `pool` this worker serves, as the catalog names it (empty: the pool of --tools if they share one)")
	registerCatalog(fs, &c.catalog)
	fs.listVar(&c.tools, "tools", envTools, nil, "comma-separated `tools` to serve (empty: every tool of the catalog)")
	fs.stringVar(&c.workerID, "worker-id", envWorkerID, host, "`id` of this worker in results and audit logs")
	fs.intVar(&c.concurrency, "concurrency", "SPLASH_WORKER_CONCURRENCY", 4, "`number` of calls of each tool run at once")
	fs.stringVar(&c.metricsAddr, "metrics-addr", envMetricsAddr, "127.0.0.1:9464", "`address` for /metrics and /healthz (empty: off)")
	fs.durationVar(&c.drainGrace, "drain-grace", "SPLASH_WORKER_DRAIN_GRACE", workeragent.DefaultDrainGrace, "how long running calls may finish after a signal before they are cancelled and handed back")
	fs.boolVar(&c.provision, "provision", "SPLASH_WORKER_PROVISION", true, "create or update the fabric's streams on start (--provision=false: bind to the host's, so the NATS user needs no stream rights)")
	registerReplicas(fs, &c.replicas)
	registerAckWait(fs, &c.ackWait)
	c.sandbox.register(fs)
}

func (c *workerConfig) run(ctx context.Context, a *app, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, args[0])
	}
	if c.concurrency < 1 {
		return fmt.Errorf("%w: --concurrency %d, want at least 1", errUsage, c.concurrency)
	}
	if c.drainGrace <= 0 {
		return fmt.Errorf("%w: --drain-grace %v, want > 0", errUsage, c.drainGrace)
	}
	if err := c.sandbox.check(); err != nil {
		return err
	}
	cat, err := loadCatalog(c.catalog)
	if err != nil {
		return err
	}
	processes := c.sandbox.settings(c.keyFile, c.nats.tls.key, c.nats.nkeyFile)
	tools, err := cat.servePool(c.pool, c.tools, processes.Protected)
	if err != nil {
		return err
	}
	pool := c.pool
	if pool == "" {
		pool = commonPool(tools)
	}
	c.nats.pool = pool
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Name()
	}
	cfg, err := fabricConfig(c.replicas, c.ackWait)
	if err != nil {
		return err
	}
	key, err := loadKeyRing(c.keyFile)
	if err != nil {
		return err
	}
	log := a.log.With("component", "worker", "worker", c.workerID, "pool", pool)
	tp, stopTracing, err := startTracing(ctx, "splash-worker", log)
	if err != nil {
		return err
	}
	defer stopTracing()
	reg := metrics.NewRegistry()
	m := metrics.NewWorker(reg, metrics.WithTools(names...))
	var srv *http.Server
	serveErr := make(chan error, 1)
	if c.metricsAddr != "" {
		l, err := listen("metrics-addr", c.metricsAddr)
		if err != nil {
			return err
		}
		srv = &http.Server{Handler: workerMux(metrics.Handler(reg)), ReadHeaderTimeout: 10 * time.Second}
		go func() {
			if err := srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
				serveErr <- err
			}
		}()
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
			defer cancel()
			_ = srv.Shutdown(sctx)
		}()
		log.Info("metrics listening", "addr", l.Addr().String())
	}
	watch := permissionWatch(c.nats.label(), log, metrics.NewNATS(reg))
	nc, err := connectNATS(ctx, c.nats, "splash worker "+c.workerID, log, watch.Option())
	if err != nil {
		return err
	}
	defer nc.Close()
	w, err := newWorker(ctx, workerParts{
		nc: nc, key: key, workerID: c.workerID, pool: pool, fabric: cfg, tools: tools,
		concurrency: c.concurrency, drainGrace: c.drainGrace, bindOnly: !c.provision, metrics: m,
		records: metrics.NewRecords(reg), log: log, processes: processes, tracer: tp.TracerProvider(),
	})
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- w.run(runCtx) }()
	select {
	case <-w.agent.Ready():
		log.Info("worker ready", "tools", names, "catalog", catalogName(c.catalog), "concurrency", c.concurrency)
	case err := <-done:
		return fmt.Errorf("%w: worker: %v", errStart, err)
	}
	select {
	case err := <-serveErr:
		cancel()
		<-done
		return fmt.Errorf("%w: metrics: %v", errStart, err)
	case err := <-done:
		if ctx.Err() == nil {
			return fmt.Errorf("worker stopped: %v", err)
		}
		if err != nil {
			return fmt.Errorf("drain: %w", err)
		}
		log.Info("worker stopped")
		return nil
	}
}
