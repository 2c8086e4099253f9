package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	natsconf "github.com/splashfabric/splashfabric/deploy/nats"
	"github.com/splashfabric/splashfabric/metrics"
)

var natsCommand = command{
	name:    "nats",
	summary: "run a NATS node with JetStream, alone or in a cluster",
	help: `
Runs the embedded NATS server, so a deployment needs no other image. A port of
-1 picks a free one; the addresses in use are logged once the node is ready.
With --config, the file is loaded first and only the flags (or environment
variables) actually given override it; --pools adds a user per worker pool
to it (the pools.json splash keys init writes: each pool's name, tools and
nkey), with the pool template of deploy/nats/splash.conf. Clustering needs --cluster-name,
--cluster-port and, on all but the first node, --routes. Runs until SIGINT or
SIGTERM, then shuts down cleanly. --metrics-addr serves /metrics, which
counts the permission violations the node refuses its clients, by identity.`,
	new: func() runner { return new(natsConfig) },
}

// natsConfig holds the flags of `splash nats`.
type natsConfig struct {
	fs          *flagSet
	name        string
	host        string
	port        int
	httpPort    int
	storeDir    string
	clusterName string
	clusterPort int
	routes      []string
	config      string
	pools       string
	metricsAddr string
	jetstream   bool
	readyWait   time.Duration
	tls         natsServerTLSFlags
}

func (c *natsConfig) flags(fs *flagSet) {
	c.fs = fs
	host, _ := os.Hostname()
	fs.stringVar(&c.name, "name", "SPLASH_NATS_NAME", host, "server `name`, unique and stable in a cluster (JetStream peers are known by it)")
	fs.stringVar(&c.host, "host", "SPLASH_NATS_HOST", "127.0.0.1", "`interface` the client, monitoring and cluster listeners bind")
	fs.intVar(&c.port, "port", "SPLASH_NATS_PORT", 4222, "client `port` (-1: any free port)")
	fs.intVar(&c.httpPort, "http-port", "SPLASH_NATS_HTTP_PORT", 0, "monitoring `port` serving /healthz and /varz (0: off, -1: any free port)")
	fs.stringVar(&c.storeDir, "store-dir", "SPLASH_NATS_STORE_DIR", "", "JetStream store `directory` (empty: the server's default under the temporary directory)")
	fs.stringVar(&c.clusterName, "cluster-name", "SPLASH_NATS_CLUSTER_NAME", "", "cluster `name`, the same on every node")
	fs.intVar(&c.clusterPort, "cluster-port", "SPLASH_NATS_CLUSTER_PORT", 0, "cluster route `port` (0: no cluster, -1: any free port)")
	fs.listVar(&c.routes, "routes", "SPLASH_NATS_ROUTES", nil, "comma-separated `urls` of other nodes, such as nats-route://nats-1:6222")
	fs.stringVar(&c.config, "config", "SPLASH_NATS_CONFIG", "", "nats-server configuration `file` (accounts, users, TLS), loaded before the flags")
	fs.stringVar(&c.pools, "pools", "SPLASH_NATS_POOLS", "", "pools.json `file` (splash keys init): one user per worker pool, with --config's pool permissions")
	fs.stringVar(&c.metricsAddr, "metrics-addr", envMetricsAddr, "", "`address` for /metrics: the permission violations the node refuses (empty: off)")
	fs.boolVar(&c.jetstream, "jetstream", "SPLASH_NATS_JETSTREAM", true, "enable JetStream (--jetstream=false for a plain NATS node)")
	fs.durationVar(&c.readyWait, "ready-timeout", "SPLASH_NATS_READY_TIMEOUT", 30*time.Second, "how long to wait for the node to accept connections before giving up")
	c.tls.register(fs)
}

// options merges the configuration file, if any, with the flags. Without a
// file every flag applies, defaults included; with one, only the flags that
// were given, so a file's settings are not silently reset to defaults.
func (c *natsConfig) options(pools []natsconf.Pool) (*server.Options, error) {
	opts := &server.Options{}
	switch {
	case c.pools != "" && c.config == "":
		return nil, fmt.Errorf("%w: --pools needs --config, whose pool permissions it fills in", errUsage)
	case c.pools != "":
		raw, err := os.ReadFile(c.config)
		if err != nil {
			return nil, fmt.Errorf("%w: --config %q: %v", errUsage, c.config, err)
		}
		text, err := natsconf.Render(string(raw), pools)
		if err != nil {
			return nil, fmt.Errorf("%w: --config %q with --pools %q: %v", errUsage, c.config, c.pools, err)
		}
		if err := opts.ProcessConfigString(text); err != nil {
			return nil, fmt.Errorf("%w: --config %q with --pools %q: %v", errUsage, c.config, c.pools, err)
		}
	case c.config != "":
		var err error
		if opts, err = server.ProcessConfigFile(c.config); err != nil {
			return nil, fmt.Errorf("%w: --config %q: %v", errUsage, c.config, err)
		}
	}
	apply := func(name string) bool { return c.config == "" || c.fs.isSet(name) }
	if apply("name") {
		opts.ServerName = c.name
	}
	if apply("host") {
		opts.Host = c.host
		opts.HTTPHost = c.host
		opts.Cluster.Host = c.host
	}
	if apply("port") {
		opts.Port = c.port
	}
	if apply("http-port") {
		opts.HTTPPort = c.httpPort
	}
	if apply("store-dir") {
		opts.StoreDir = c.storeDir
	}
	if apply("cluster-name") {
		opts.Cluster.Name = c.clusterName
	}
	if apply("cluster-port") {
		opts.Cluster.Port = c.clusterPort
	}
	if apply("routes") {
		opts.Routes = nil
		if len(c.routes) > 0 {
			opts.Routes = server.RoutesFromStr(strings.Join(c.routes, ","))
		}
	}
	if apply("jetstream") {
		opts.JetStream = c.jetstream
	}
	// After the cluster port, which decides whether routes need TLS too.
	if apply("tls-cert") || apply("tls-key") || apply("tls-ca") {
		if err := c.tls.apply(opts); err != nil {
			return nil, err
		}
	}
	// A file without server_name would leave the server its random ID, and
	// a clustered node that restarts under a new name is a new JetStream
	// peer; the host name is stable across restarts of a container.
	if opts.ServerName == "" {
		opts.ServerName = c.name
	}
	// A client cut off the network keeps its pull requests, taking
	// invocations it never receives, until the node drops it: within
	// the ack wait, so a redelivered one cannot go to it again (see
	// deploy/nats/splash.conf, which says the same). A file may set its
	// own.
	if opts.PingInterval == 0 {
		opts.PingInterval = silentClientPing
	}
	if opts.MaxPingsOut == 0 {
		opts.MaxPingsOut = silentClientPings
	}
	// Signals belong to the command, which shuts the server down itself.
	opts.NoSigs = true
	if len(opts.Routes) > 0 && opts.Cluster.Port == 0 {
		return nil, fmt.Errorf("%w: --routes needs --cluster-port", errUsage)
	}
	return opts, nil
}

// A node pings a silent client every silentClientPing and drops it after
// silentClientPings go unanswered: at most 8s after its last word, below
// the smallest ack wait worth running (10s in the compose cluster).
const (
	silentClientPing  = 2 * time.Second
	silentClientPings = 2
)

func (c *natsConfig) run(ctx context.Context, a *app, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, args[0])
	}
	var pools []natsconf.Pool
	if c.pools != "" {
		var err error
		if pools, err = readPoolsManifest(c.pools); err != nil {
			return err
		}
	}
	opts, err := c.options(pools)
	if err != nil {
		return err
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		return fmt.Errorf("%w: %v", errNats, err)
	}
	log := a.log.With("component", "nats")
	reg := metrics.NewRegistry()
	fatal := attachNatsLogger(srv, log, violationCounter(metrics.NewNATS(reg), pools))
	if c.metricsAddr != "" {
		l, err := listen("metrics-addr", c.metricsAddr)
		if err != nil {
			return err
		}
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", metrics.Handler(reg))
		hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = hs.Serve(l) }()
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
			defer cancel()
			_ = hs.Shutdown(sctx)
		}()
	}
	fail := func(format string, v ...any) error {
		srv.Shutdown()
		srv.WaitForShutdown()
		return fmt.Errorf("%w: "+format, append([]any{errNats}, v...)...)
	}
	// Start returns once startup is done or has failed; a failure is only
	// visible as a fatal log message.
	srv.Start()
	select {
	case msg := <-fatal:
		return fail("%s", msg)
	default:
	}
	if !srv.ReadyForConnections(c.readyWait) {
		return fail("not accepting connections after %v", c.readyWait)
	}
	if opts.JetStream && !srv.JetStreamEnabled() {
		return fail("JetStream did not start")
	}
	attrs := []any{"name", srv.Name(), "client_addr", srv.Addr().String(), "jetstream", srv.JetStreamEnabled()}
	if addr := srv.MonitorAddr(); addr != nil {
		attrs = append(attrs, "monitor_addr", addr.String())
	}
	if addr := srv.ClusterAddr(); addr != nil {
		attrs = append(attrs, "cluster_addr", addr.String(), "cluster", opts.Cluster.Name)
	}
	if srv.JetStreamEnabled() {
		attrs = append(attrs, "store_dir", srv.StoreDir())
	}
	log.Info("nats node ready", attrs...)

	down := make(chan struct{})
	go func() {
		srv.WaitForShutdown()
		close(down)
	}()
	select {
	case <-ctx.Done():
		log.Info("nats node stopping", "reason", context.Cause(ctx))
		srv.Shutdown()
		<-down
		log.Info("nats node stopped")
		return nil
	case <-down:
		return fmt.Errorf("%w: server shut down by itself", errNats)
	}
}
