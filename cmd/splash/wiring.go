package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/splashfabric/splashfabric/console"
	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/hostloop"
	"github.com/splashfabric/splashfabric/hostmetrics"
	"github.com/splashfabric/splashfabric/hostnats"
	"github.com/splashfabric/splashfabric/hosttrace"
	"github.com/splashfabric/splashfabric/httpapi"
	"github.com/splashfabric/splashfabric/httpapi/apitoken"
	"github.com/splashfabric/splashfabric/internal/ratelog"
	"github.com/splashfabric/splashfabric/metrics"
	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/toolspec"
	"github.com/splashfabric/splashfabric/tracing"
	"github.com/splashfabric/splashfabric/workflow"
)

// envReplicas is shared by host and worker: both provision the same
// streams, and they must agree on their replica count.
const envReplicas = "SPLASH_REPLICAS"

// shutdownTimeout bounds each part's graceful stop, so a stuck client
// connection cannot hold the process after a signal.
const shutdownTimeout = 10 * time.Second

// registerReplicas adds --replicas to a command that provisions streams.
func registerReplicas(fs *flagSet, p *int) {
	fs.intVar(p, "replicas", envReplicas, 1, "`replicas` of every stream and bucket: 1 on a single node, 3 in a cluster")
}

// envAckWait is shared by host and worker: the pools' consumers and the
// host's events consumer take it, and whoever provisions a consumer last
// writes its setting.
const envAckWait = "SPLASH_ACK_WAIT"

// minAckWait keeps the ack wait above what a worker's heartbeat (a third
// of it) can report in time on a busy machine.
const minAckWait = time.Second

// registerAckWait adds --ack-wait to a command that creates consumers.
func registerAckWait(fs *flagSet, p *time.Duration) {
	fs.durationVar(p, "ack-wait", envAckWait, fabric.DefaultConfig().AckWait,
		"how long an invocation a worker took (or an event the host took) may go without an ack or a progress report before it is redelivered; keep it below the tools' deadlines, the same on every host and worker")
}

// fabricConfig is the fabric every process of a deployment shares; only
// the replica count and the ack wait (0: the default) are an operator's
// choice.
func fabricConfig(replicas int, ackWait time.Duration) (fabric.Config, error) {
	cfg := fabric.DefaultConfig()
	cfg.Replicas = replicas
	if ackWait != 0 {
		if ackWait < minAckWait {
			return cfg, fmt.Errorf("%w: --ack-wait %v, want at least %v", errUsage, ackWait, minAckWait)
		}
		cfg.AckWait = ackWait
	}
	if err := cfg.Validate(); err != nil {
		return cfg, fmt.Errorf("%w: --replicas %d: %v", errUsage, replicas, err)
	}
	return cfg, nil
}

// clientPingInterval is how often a host or worker asks its node whether
// the connection still carries anything.
const clientPingInterval = 5 * time.Second

// connectNATS connects with infinite reconnects. The first connection is
// retried with backoff until ctx ends, so a host or worker started before
// its NATS cluster (a compose file bringing everything up at once) waits
// for it instead of exiting. It authenticates as f says (a user, or a
// pool's nkey), with the identity's private inbox prefix; extra options
// (an error handler such as a fabric.PermissionWatch's) come last.
func connectNATS(ctx context.Context, f natsClientFlags, name string, log *slog.Logger, extra ...nats.Option) (*nats.Conn, error) {
	opts := []nats.Option{
		nats.Name(name),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(time.Second),
		// A connection that went silent (the network cut, the node
		// unreachable) is given up within 15s and another node tried,
		// rather than when TCP gives up, which after a long cut can be
		// minutes after the network is back.
		nats.PingInterval(clientPingInterval),
		nats.MaxPingsOutstanding(2),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				log.Warn("nats disconnected", "err", err)
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			log.Info("nats reconnected", "url", nc.ConnectedUrlRedacted())
		}),
	}
	idOpts, err := f.identityOptions()
	if err != nil {
		return nil, err
	}
	opts = append(opts, idOpts...)
	tlsOpts, err := f.tls.options()
	if err != nil {
		return nil, err
	}
	opts = append(opts, tlsOpts...)
	opts = append(opts, extra...)
	bo := backoff.NewExponentialBackOff(backoff.WithMaxInterval(5*time.Second), backoff.WithMaxElapsedTime(0))
	for {
		nc, err := nats.Connect(f.url, opts...)
		if err == nil {
			log.Info("nats connected", "url", nc.ConnectedUrlRedacted())
			return nc, nil
		}
		if errors.Is(err, nats.ErrAuthorization) {
			return nil, fmt.Errorf("%w: nats %s: %v", errStart, redactURLs(f.url), err)
		}
		if certificateRefused(err) {
			// A server whose certificate this client does not trust, or
			// one without TLS when the client requires it, is a
			// configuration to fix, not a node still starting.
			return nil, fmt.Errorf("%w: nats %s: %v", errTLS, redactURLs(f.url), err)
		}
		wait := bo.NextBackOff()
		log.Warn("nats not reachable, retrying", "url", redactURLs(f.url), "err", err, "in", wait)
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: nats %s: %v", errStart, redactURLs(f.url), err)
		case <-time.After(wait):
		}
	}
}

// certificateRefused reports a connection that failed on the server's
// certificate or on TLS being required by one side only.
func certificateRefused(err error) bool {
	var verify *tls.CertificateVerificationError
	var unknown x509.UnknownAuthorityError
	var host x509.HostnameError
	var invalid x509.CertificateInvalidError
	return errors.As(err, &verify) || errors.As(err, &unknown) || errors.As(err, &host) || errors.As(err, &invalid) ||
		errors.Is(err, nats.ErrSecureConnRequired) || errors.Is(err, nats.ErrSecureConnWanted)
}

// redactURLs hides passwords written into NATS URLs before they are
// logged.
func redactURLs(urls string) string {
	parts := strings.Split(urls, ",")
	for i, u := range parts {
		if at := strings.LastIndex(u, "@"); at >= 0 {
			if scheme := strings.Index(u, "://"); scheme >= 0 && scheme < at {
				parts[i] = u[:scheme+3] + "[redacted]" + u[at:]
			}
		}
	}
	return strings.Join(parts, ",")
}

// provision creates or updates the fabric's streams, retrying until ctx
// ends: JetStream in a fresh cluster answers only once it elected a
// meta leader.
func provision(ctx context.Context, js jetstream.JetStream, cfg fabric.Config, log *slog.Logger) error {
	bo := backoff.NewExponentialBackOff(backoff.WithMaxInterval(5*time.Second), backoff.WithMaxElapsedTime(0))
	for {
		err := fabric.Provision(ctx, js, cfg)
		if err == nil {
			return nil
		}
		wait := bo.NextBackOff()
		log.Warn("provisioning streams failed, retrying", "err", err, "in", wait)
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: provision streams: %v", errStart, err)
		case <-time.After(wait):
		}
	}
}

// hostParts is what startHost needs: a connection, the key, and where
// to listen.
type hostParts struct {
	nc  *nats.Conn
	key protocol.Keys
	// poolKeys holds the rings of the pools that have their own, by
	// pool; every other pool shares key.
	poolKeys map[string]protocol.KeyRing
	hostID   string
	fabric   fabric.Config
	apiToken string
	// apiTokens, when set, replaces apiToken: scoped tokens.
	apiTokens apitoken.Verifier
	// api serves the HTTP API; metrics, when not nil, serves /metrics
	// alone (otherwise /metrics is on api).
	api     net.Listener
	metrics net.Listener
	reg     *prometheus.Registry
	log     *slog.Logger
	// catalog is the host's own catalog, which the fabric's published one
	// overlays.
	catalog *catalog
	limits  hostLimits
	http    httpLimits
	mcp     mcpFlags
	// tracing traces the host's sessions when it is on.
	tracing *tracing.Provider
}

// runningHost is a host's loop, transport and HTTP servers.
type runningHost struct {
	log         *slog.Logger
	transport   *hostnats.HostTransport
	archive     *hostnats.SessionArchive
	leases      *hostnats.HostLeases
	loop        *hostloop.Loop
	events      *httpapi.Broadcaster
	servers     []*http.Server
	serveErr    chan error
	provisioned atomic.Bool
	// stopCatalog ends the watch on the published catalog.
	stopCatalog func()
	// closeMCP ends the open MCP sessions at shutdown; nil without /mcp.
	closeMCP func()
	// stopSeries ends the sampling of the console's series and waits
	// for it.
	stopSeries func()
}

// startHost provisions the streams and starts the transport, the loop
// with the demo catalog, and the HTTP API. On error it has closed what it
// started, but not the listeners' owner's connection.
func startHost(ctx context.Context, p hostParts) (*runningHost, error) {
	h := &runningHost{log: p.log, serveErr: make(chan error, 2)}
	js, err := jetstream.New(p.nc)
	if err != nil {
		return nil, fmt.Errorf("%w: jetstream: %v", errStart, err)
	}
	if err := provision(ctx, js, p.fabric, p.log); err != nil {
		return nil, err
	}
	h.provisioned.Store(true)
	obs := hostmetrics.New(metrics.NewHost(p.reg))
	// Every refused frame is counted; a flood of them writes a few lines
	// a second per reason, not one each.
	rejectLog := ratelog.New(p.log, time.Second, 5)
	// The catalog names each tool's pool, so each answer is verified
	// under the ring of the pool serving its tool; a tool published
	// later gets its pool as soon as the watch below delivers it.
	live := fabric.NewLiveCatalog(p.catalog.set)
	poolKeys := make(map[string]protocol.Keys, len(p.poolKeys))
	for pool, ring := range p.poolKeys {
		poolKeys[pool] = ring
	}
	warnSharedPools(p.log, live.Current(), p.poolKeys)
	h.transport, err = hostnats.NewHostTransport(ctx, p.nc, p.fabric, p.hostID, p.key,
		hostnats.WithPoolKeys(poolKeys, live.PoolOf),
		hostnats.WithRejectHandler(func(reason, subject string, err error) {
			obs.FrameRejected(reason, subject, err)
			rejectLog.Warn(reason, "frame rejected", "reason", reason, "subject", subject, "err", err)
		}),
		hostnats.WithErrorHandler(func(err error) { p.log.Warn("transport error", "err", err) }))
	if err != nil {
		return nil, fmt.Errorf("%w: host transport: %v", errStart, err)
	}
	// Sessions outlive the process in splash_sessions: a restarted host
	// still answers for the ones the previous process held.
	// Its records are sealed with the host's key ring; one that fails is
	// refused, counted and logged (at a bounded rate), never served.
	records := metrics.NewRecords(p.reg)
	h.archive, err = hostnats.NewSessionArchive(ctx, p.nc, p.fabric, p.key,
		hostnats.WithRecordRejectHandler(func(reason string, err error) {
			records.Rejected(metrics.StoreSessionArchive, reason)
			rejectLog.Warn("record "+reason, "stored record rejected", "store", metrics.StoreSessionArchive, "reason", reason, "err", err)
		}),
		hostnats.WithErrorHandler(func(err error) { p.log.Warn("session archive", "err", err) }))
	if err != nil {
		_ = h.transport.Close()
		return nil, fmt.Errorf("%w: session archive: %v", errStart, err)
	}
	// Suspended sessions outlive the process in SPLASH_LEDGER, under the
	// host's lease: its next process, or another host once the lease
	// lapsed, carries them on.
	ledger, err := hostnats.NewLedgerLog(ctx, p.nc, p.fabric, p.key)
	if err == nil {
		h.leases, err = hostnats.NewHostLeases(ctx, p.nc, p.fabric, p.key, p.limits.lease)
	}
	if err != nil {
		_ = h.archive.Close()
		_ = h.transport.Close()
		return nil, fmt.Errorf("%w: session ledger: %v", errStart, err)
	}
	stopCatalog, err := watchCatalog(ctx, js, p, live)
	if err != nil {
		_ = h.archive.Close()
		_ = h.transport.Close()
		return nil, err
	}
	h.stopCatalog = stopCatalog
	h.events = httpapi.NewBroadcaster(httpapi.BroadcasterConfig{})
	index := httpapi.NewSessionIndex(httpapi.IndexConfig{})
	timelines := httpapi.NewTimelines(httpapi.TimelineConfig{})
	observers := []hostloop.Observer{h.events, obs, index, timelines, newResumeLog(p.log)}
	if p.tracing.Enabled() {
		observers = append(observers, hosttrace.New(p.tracing.TracerProvider()))
	}
	h.loop, err = startLoop(ctx, hostloop.LoopConfig{
		Transport: h.transport,
		HostID:    p.hostID,
		// Each session registers the catalog as it is when the session
		// starts, and keeps it: a change reaches new sessions only.
		Catalog: func(rt *host.Runtime) error { return rt.RegisterTools(live.Current()) },
		// An input no invocation could carry is refused at the
		// script's tool.start, before it takes any budget.
		Runtime:  host.Config{MaxInputBytes: p.fabric.MaxToolInputBytes(p.nc.MaxPayload())},
		Observer: httpapi.Tee(observers...),
		Archive:  h.archive,
		Ledger:   ledger,
		Leases:   h.leases,
		// A resumed call unanswered for an ack wait is asked about; the
		// stream may deliver it until MaxDeliver ack waits have passed.
		ReconcileAfter:    p.fabric.AckWait,
		RedeliveryHorizon: time.Duration(p.fabric.MaxDeliver) * p.fabric.AckWait,
		DuplicateWindow:   p.fabric.DuplicateWindow,
		Restart:           workflow.RestartPolicy(p.limits.restart),
		Limits:            p.limits.limits,
		MemoryBudget:      p.limits.memoryBudget,
		AuditPerSession:   p.limits.auditPerSession,
	}, p.log)
	if err != nil {
		h.events.Close()
		stopCatalog()
		_ = h.archive.Close()
		_ = h.transport.Close()
		return nil, fmt.Errorf("%w: host loop: %v", errStart, err)
	}
	p.log.Info("host incarnation registered", "incarnation", h.loop.Incarnation().ID)
	metricsHandler := metrics.Handler(p.reg)
	apiMetrics := metrics.NewAPI(p.reg, httpapi.Codes())
	apiCfg := httpapi.Config{
		Token:  p.apiToken,
		Tokens: p.apiTokens,
		// Shared with /mcp, so that a session run there is its token's
		// on the API too.
		Gate:   httpapi.NewGate(h.loop, p.http.gate()),
		Events: h.events,
		Ready: func(ctx context.Context) error {
			return h.ready(ctx, p.nc, js)
		},
		Resuming: h.loop.Resuming,
		// The console and what it reads beyond the loop.
		Index:         index,
		Timelines:     timelines,
		Series:        h.startSeries(p.reg),
		Waiting:       h.transport,
		Tools:         toolSource{live: live, transport: h.transport},
		UI:            console.Handler(),
		OnAuthFailure: obs.APIAuthFailure,
		OnRefused:     apiMetrics.Refused,
		Logger:        p.log,
		// Prometheus scrapes without credentials; the series hold no
		// ids or payloads, only bounded labels.
		PublicMetrics: true,
	}
	p.http.apply(&apiCfg)
	if p.tracing.Enabled() {
		apiCfg.Tracer = p.tracing.TracerProvider()
	}
	if err := h.mountMCP(&apiCfg, live, p); err != nil {
		h.stop()
		h.events.Close()
		return nil, err
	}
	if p.metrics == nil {
		apiCfg.Metrics = metricsHandler
	}
	srvCfg := p.http.server
	srvCfg.OnRefused = apiMetrics.Refused
	h.serve(p.api, httpapi.New(h.loop, apiCfg), srvCfg)
	if p.metrics != nil {
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", metricsHandler)
		h.serve(p.metrics, mux, srvCfg)
	}
	return h, nil
}

// watchCatalog keeps live, the host's catalog, current: its own file
// catalog, overlaid by the tools operators publish to the fabric (splash
// tools apply), which it watches. The host provisions the bucket but never
// writes it. Every tool of the catalog gets its pool consumer, created (or
// updated to this host's settings) by the host: a pool's workers may only
// bind to theirs.
func watchCatalog(ctx context.Context, js jetstream.JetStream, p hostParts, live *fabric.LiveCatalog) (func(), error) {
	if err := fabric.EnsureToolConsumers(ctx, js, p.fabric, live.Current().Names()); err != nil {
		return nil, fmt.Errorf("%w: pool consumers: %v", errStart, err)
	}
	store, err := fabric.OpenCatalogStore(ctx, js, p.fabric, true)
	if err != nil {
		return nil, fmt.Errorf("%w: catalog bucket: %v", errStart, err)
	}
	stop, err := store.Watch(context.WithoutCancel(ctx), func(published *toolspec.Set) {
		live.SetPublished(published)
		p.log.Info("published catalog", "tools", published.Names())
		warnSharedPools(p.log, live.Current(), p.poolKeys)
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
		defer cancel()
		if err := fabric.EnsureToolConsumers(cctx, js, p.fabric, published.Names()); err != nil {
			p.log.Warn("pool consumers of published tools", "err", err)
		}
	}, func(err error) {
		p.log.Warn("published catalog record refused", "err", err)
	})
	if err != nil {
		return nil, fmt.Errorf("%w: catalog watch: %v", errStart, err)
	}
	return stop, nil
}

// warnSharedPools says which pools of set have no ring of their own: their
// frames are sealed with the host's ring, so their workers hold it.
func warnSharedPools(log *slog.Logger, set *toolspec.Set, own map[string]protocol.KeyRing) {
	var shared []string
	for _, name := range set.Names() {
		t, _ := set.Lookup(name)
		if _, ok := own[t.Pool()]; !ok && !slices.Contains(shared, t.Pool()) {
			shared = append(shared, t.Pool())
		}
	}
	if len(shared) > 0 && len(own) > 0 {
		log.Warn("pools without a key ring of their own share the host's: their workers hold the host's key", "pools", shared)
	}
}

// startLoop starts the loop, retrying while its incarnation cannot be
// written to the session archive: right after provisioning, a replicated
// bucket may not answer yet. Each try draws a new incarnation.
func startLoop(ctx context.Context, cfg hostloop.LoopConfig, log *slog.Logger) (*hostloop.Loop, error) {
	bo := backoff.NewExponentialBackOff(backoff.WithMaxInterval(5*time.Second), backoff.WithMaxElapsedTime(0))
	for {
		l, err := hostloop.StartLoop(cfg)
		if err == nil || !errors.Is(err, hostloop.ErrArchiveUnavailable) && !errors.Is(err, hostloop.ErrLedgerUnavailable) {
			return l, err
		}
		wait := bo.NextBackOff()
		log.Warn("session stores not answering, retrying", "err", err, "in", wait)
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(wait):
		}
	}
}

// ready is /readyz: NATS connected and the streams in place.
func (h *runningHost) ready(ctx context.Context, nc *nats.Conn, js jetstream.JetStream) error {
	if !h.provisioned.Load() {
		return errors.New("streams not provisioned")
	}
	if s := nc.Status(); s != nats.CONNECTED {
		return fmt.Errorf("nats %s", s)
	}
	for _, name := range []string{fabric.StreamInvoke, fabric.StreamEvents} {
		if _, err := js.Stream(ctx, name); err != nil {
			return fmt.Errorf("stream %s: %v", name, err)
		}
	}
	return nil
}

// serve serves handler on l, every connection bounded by cfg (see
// httpapi.NewServer).
func (h *runningHost) serve(l net.Listener, handler http.Handler, cfg httpapi.ServerConfig) {
	srv := httpapi.NewServer(handler, cfg)
	srv.RegisterOnShutdown(h.events.Close)
	if h.closeMCP != nil {
		srv.RegisterOnShutdown(h.closeMCP)
	}
	h.servers = append(h.servers, srv.Server)
	go func() {
		if err := srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
			h.serveErr <- err
		}
	}()
}

// stop shuts the HTTP servers down (ending event streams), then the loop,
// then the archive and the transport; the caller closes the connection
// afterwards.
// startSeries samples the host's own collectors for the console's charts
// until the host stops.
func (h *runningHost) startSeries(reg prometheus.Gatherer) *metrics.Series {
	s := metrics.NewSeries(metrics.SeriesConfig{Gatherer: reg})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Run(ctx)
	}()
	h.stopSeries = func() {
		cancel()
		<-done
	}
	return s
}

func (h *runningHost) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if h.stopSeries != nil {
		h.stopSeries()
	}
	for _, srv := range h.servers {
		if err := srv.Shutdown(ctx); err != nil {
			h.log.Warn("http shutdown", "err", err)
			_ = srv.Close()
		}
	}
	// The loop records its suspended sessions as stopped and flushes the
	// archive before Stop returns; only then may the archive close.
	h.loop.Stop()
	_ = h.leases.Close()
	h.stopCatalog()
	if st := h.archive.Stats(); st.Failed+st.Dropped > 0 {
		h.log.Warn("session archive lost records", "failed", st.Failed, "dropped", st.Dropped, "stored", st.Stored)
	} else {
		h.log.Info("session archive flushed", "stored", st.Stored)
	}
	if err := h.archive.Close(); err != nil {
		h.log.Warn("session archive close", "err", err)
	}
	if err := h.transport.Close(); err != nil {
		h.log.Warn("transport close", "err", err)
	}
}

// listen opens a TCP listener, naming the flag in the error.
func listen(flagName, addr string) (net.Listener, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%w: --%s %s: %v", errStart, flagName, addr, err)
	}
	return l, nil
}
