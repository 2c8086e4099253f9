package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/splashfabric/splashfabric/console"
	natsconf "github.com/splashfabric/splashfabric/deploy/nats"
	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/metrics"
	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/toolspec"
)

var devCommand = command{
	name:    "dev",
	summary: "run NATS, a host with its HTTP API and a worker pool in one process",
	help: `
The zero-setup default: an embedded NATS JetStream node with its data in
--data-dir, the host loop and HTTP API on --api-addr, and --workers workers
serving the tools of --catalog (default: the demo tools; docs/catalog.md
shows how to add your own, in any language). Prints where everything
listens and a command to try.

The host's key ring is generated into --data-dir on first run and reused,
so ledgers and records left in the store stay readable; so are each pool's
key ring and NATS nkey (pool-keys/, pool-nkeys/; a pool per pool: of the
catalog, see docs/topology.md) and the passwords of the NATS users host and
ops (nats-<user>.password, mode 0600): the node admits no anonymous client,
and each part connects as its own identity with the permissions of
deploy/nats/splash.conf, --workers workers per pool. The API token is generated for
each run into --data-dir/api.token (0600) unless --api-token or
SPLASH_API_TOKEN gives one; it is never printed, so pass it to clients
through SPLASH_API_TOKEN rather than on a command line. When the default
API address is taken, dev picks a free port and says which; an address given
explicitly must be free. Process tools of the catalog run in Bubblewrap
sandboxes (docs/process-tools.md) that may not hold --data-dir or the
user's home. Runs until SIGINT or SIGTERM, then drains the workers and
shuts everything down.`,
	new: func() runner { return new(devConfig) },
}

// devHostID is the host id of the dev process; one dev process per data
// directory is expected, so a fixed id lets a restart pick up its events.
const devHostID = "dev"

// devKeyFile is the name of the host's generated key ring inside
// --data-dir (and of a deployment's, splash keys init).
const devKeyFile = "frame.key"

// devConfig holds the flags of `splash dev`.
type devConfig struct {
	fs          *flagSet
	dataDir     string
	apiAddr     string
	apiToken    string
	metricsAddr string
	catalog     string
	limits      hostLimits
	http        httpLimits
	mcp         mcpFlags
	workers     int
	natsPort    int
	ackWait     time.Duration
	sandbox     sandboxFlags
}

// devAckWait is dev's ack wait: below the demo tools' 30s deadlines, so a
// call whose worker died with the process is redelivered, and reconciled,
// well before its deadline passes.
const devAckWait = 10 * time.Second

func (c *devConfig) flags(fs *flagSet) {
	c.fs = fs
	fs.stringVar(&c.dataDir, "data-dir", envDataDir, defaultDataDir(), "`directory` for the NATS store and the generated keys")
	fs.stringVar(&c.apiAddr, "api-addr", envAPIAddr, defaultAPIAddr, "`address` of the host HTTP API (port 0: any free port)")
	fs.stringVar(&c.apiToken, "api-token", envAPIToken, "", "bearer `token` for the host API (empty: generate one into <data-dir>/api.token; prefer the variable: flags show in process lists)")
	fs.stringVar(&c.metricsAddr, "metrics-addr", envMetricsAddr, "", "`address` for /metrics (empty: on the API listener)")
	registerCatalog(fs, &c.catalog)
	c.limits.register(fs)
	c.http.register(fs)
	c.mcp.register(fs)
	fs.intVar(&c.workers, "workers", "SPLASH_DEV_WORKERS", 4, "`number` of workers in the pool")
	fs.intVar(&c.natsPort, "nats-port", "SPLASH_DEV_NATS_PORT", -1, "client `port` of the embedded NATS node on 127.0.0.1 (-1: any free port)")
	fs.durationVar(&c.ackWait, "ack-wait", envAckWait, devAckWait,
		"how long a worker may hold a call unanswered before it is redelivered; keep it below the tools' deadlines, so a call whose worker died is found well before its deadline")
	c.sandbox.register(fs)
}

func (c *devConfig) run(ctx context.Context, a *app, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, args[0])
	}
	if err := c.limits.applyMemoryLimit(a); err != nil {
		return err
	}
	d, err := c.start(ctx, a.log)
	if err != nil || d == nil {
		return err
	}
	defer d.stop()
	printDevBanner(a.stdout, d.banner)
	a.log.Info("dev ready", "api_url", d.banner.apiURL, "nats_url", d.banner.natsURL, "metrics_url", d.banner.metricsURL,
		"console_url", d.banner.apiURL+console.Prefix, "data_dir", c.dataDir, "workers", c.workers)

	select {
	case <-ctx.Done():
		a.log.Info("dev stopping", "reason", context.Cause(ctx))
	case err := <-d.host.serveErr:
		return fmt.Errorf("%w: http: %v", errStart, err)
	case err := <-d.workerErr:
		return fmt.Errorf("worker stopped: %w", err)
	}
	return nil
}

// devStack is everything `splash dev` runs in its process: the NATS node,
// the host with its HTTP API, and the worker pool. `splash bench --dev`
// starts the same stack, so what it measures is what a user runs.
type devStack struct {
	host *runningHost
	// workerErr carries a worker that stopped on its own.
	workerErr <-chan error
	banner    devBanner
	// token is the API's bearer token.
	token string
	// closers run in reverse order at stop: the workers drain, the host
	// stops, then NATS.
	closers []func()
}

// stop shuts the stack down, last started first.
func (d *devStack) stop() {
	for i := len(d.closers) - 1; i >= 0; i-- {
		d.closers[i]()
	}
	d.closers = nil
}

// start checks the flags and starts the stack; it returns a nil stack and
// no error when ctx ended before the workers were ready. On error, what it
// started is stopped.
func (c *devConfig) start(ctx context.Context, log *slog.Logger) (_ *devStack, err error) {
	if c.workers < 1 {
		return nil, fmt.Errorf("%w: --workers %d, want at least 1", errUsage, c.workers)
	}
	if c.natsPort < -1 || c.natsPort > 65535 {
		return nil, fmt.Errorf("%w: --nats-port %d", errUsage, c.natsPort)
	}
	if err := c.limits.check(); err != nil {
		return nil, err
	}
	if err := c.http.check(); err != nil {
		return nil, err
	}
	if err := c.sandbox.check(); err != nil {
		return nil, err
	}
	cat, err := loadCatalog(c.catalog)
	if err != nil {
		return nil, err
	}
	// The data directory holds the frame key, the NATS passwords, the
	// API token and the store: no tool's sandbox may see any of it.
	processes := c.sandbox.settings(c.dataDir)
	served, err := cat.serve(nil, processes.Protected)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(c.dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("%w: --data-dir: %v", errStart, err)
	}
	key, keyPath, err := devKey(c.dataDir)
	if err != nil {
		return nil, err
	}
	passwords, err := devPasswords(c.dataDir)
	if err != nil {
		return nil, err
	}
	// Each pool of the catalog gets its own NATS identity and key ring,
	// kept in the data directory as the compose cluster keeps them in its
	// secrets: a pool's workers hold its nkey and ring and nothing else.
	pools, err := ensurePoolSecrets(c.dataDir, poolsOf(served))
	if err != nil {
		return nil, err
	}
	natsPools := make([]natsconf.Pool, len(pools))
	poolKeys := make(map[string]protocol.KeyRing, len(pools))
	for i, p := range pools {
		if natsPools[i], err = p.natsPool(); err != nil {
			return nil, err
		}
		poolKeys[p.name] = p.ring
	}
	if _, err := writePoolsManifest(c.dataDir, natsPools); err != nil {
		return nil, err
	}
	token, tokenPath := c.apiToken, ""
	if token == "" {
		if token, err = randomToken(); err != nil {
			return nil, err
		}
		if tokenPath, err = writeDevToken(c.dataDir, token); err != nil {
			return nil, err
		}
	}
	d := &devStack{token: token}
	defer func() {
		if err != nil {
			d.stop()
		}
	}()
	api, err := c.listenAPI(log)
	if err != nil {
		return nil, err
	}
	d.closers = append(d.closers, func() { _ = api.Close() })
	var metricsL net.Listener
	if c.metricsAddr != "" {
		if metricsL, err = listen("metrics-addr", c.metricsAddr); err != nil {
			return nil, err
		}
		d.closers = append(d.closers, func() { _ = metricsL.Close() })
	}

	reg := metrics.NewRegistry()
	natsMetrics := metrics.NewNATS(reg)
	srv, err := c.startNATS(log, passwords, natsPools, natsMetrics)
	if err != nil {
		return nil, err
	}
	d.closers = append(d.closers, func() {
		srv.Shutdown()
		srv.WaitForShutdown()
	})
	natsURL := srv.ClientURL()

	fcfg, err := fabricConfig(1, c.ackWait)
	if err != nil {
		return nil, err
	}
	hostLog := log.With("component", "host")
	// Two services in one process, as in a cluster: the host's spans and
	// the workers' are told apart in a trace viewer.
	hostTracing, stopHostTracing, err := startTracing(ctx, "splash-host", hostLog)
	if err != nil {
		return nil, err
	}
	workerTracing, stopWorkerTracing, err := startTracing(ctx, "splash-worker", log.With("component", "worker"))
	if err != nil {
		stopHostTracing()
		return nil, err
	}
	// Closed last (closers run in reverse): the spans the stop ends are
	// exported.
	d.closers = append(d.closers, stopHostTracing, stopWorkerTracing)
	hostWatch := permissionWatch(natsconf.UserHost, hostLog, natsMetrics)
	hostNC, err := nats.Connect(natsURL, nats.Name("splash dev host"), nats.MaxReconnects(-1),
		nats.UserInfo(natsconf.UserHost, passwords[natsconf.UserHost]),
		nats.CustomInboxPrefix(fabric.InboxPrefix(natsconf.UserHost)), hostWatch.Option())
	if err != nil {
		return nil, fmt.Errorf("%w: nats: %v", errStart, err)
	}
	d.closers = append(d.closers, hostNC.Close)
	d.host, err = startHost(ctx, hostParts{
		nc: hostNC, key: key, poolKeys: poolKeys, hostID: devHostID, fabric: fcfg, apiToken: token,
		api: api, metrics: metricsL, reg: reg, log: hostLog, catalog: cat, limits: c.limits, http: c.http, mcp: c.mcp,
		tracing: hostTracing,
	})
	if err != nil {
		return nil, err
	}
	d.closers = append(d.closers, d.host.stop)

	// The pools share one metrics set: its series are the process's, as
	// a scrape of one dev process sees them.
	tools := make([]string, len(served))
	for i, t := range served {
		tools[i] = t.Name()
	}
	wm := metrics.NewWorker(reg, metrics.WithTools(tools...))
	records := metrics.NewRecords(reg)
	runCtx, cancelWorkers := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var ncs []*nats.Conn
	d.closers = append(d.closers, func() {
		cancelWorkers()
		wg.Wait()
		for _, nc := range ncs {
			nc.Close()
		}
	})
	workerErr := make(chan error, c.workers*len(pools))
	d.workerErr = workerErr
	for _, p := range pools {
		poolTools := make([]*toolspec.Tool, 0, len(p.tools))
		for _, t := range served {
			if t.Pool() == p.name {
				poolTools = append(poolTools, t)
			}
		}
		auth, err := p.nkeyOption()
		if err != nil {
			return nil, fmt.Errorf("%w: pool %s: %v", errStart, p.name, err)
		}
		identity := fabric.PoolIdentity(p.name)
		for i := 1; i <= c.workers; i++ {
			id := fmt.Sprintf("dev-%s-%d", p.name, i)
			wlog := log.With("component", "worker", "worker", id, "pool", p.name)
			nc, err := nats.Connect(natsURL, nats.Name("splash "+id), nats.MaxReconnects(-1), auth,
				nats.CustomInboxPrefix(fabric.InboxPrefix(identity)), permissionWatch(identity, wlog, natsMetrics).Option())
			if err != nil {
				return nil, fmt.Errorf("%w: nats: %v", errStart, err)
			}
			ncs = append(ncs, nc)
			w, err := newWorker(ctx, workerParts{
				nc: nc, key: p.ring, workerID: id, pool: p.name, fabric: fcfg, tools: poolTools,
				// A pool may not create the fabric's streams or its
				// consumers: the host made them above, as in the
				// cluster.
				bindOnly: true, metrics: wm, records: records,
				log:       wlog,
				processes: processes,
				tracer:    workerTracing.TracerProvider(),
			})
			if err != nil {
				return nil, err
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := w.run(runCtx); err != nil {
					workerErr <- fmt.Errorf("%s: %w", id, err)
				}
			}()
			select {
			case <-w.agent.Ready():
			case err := <-workerErr:
				return nil, fmt.Errorf("%w: %v", errStart, err)
			case <-ctx.Done():
				d.stop()
				return nil, nil
			}
		}
	}

	apiURL := "http://" + api.Addr().String()
	metricsURL := apiURL + "/metrics"
	if metricsL != nil {
		metricsURL = "http://" + metricsL.Addr().String() + "/metrics"
	}
	d.banner = devBanner{
		natsURL: natsURL, dataDir: c.dataDir, keyPath: keyPath, apiURL: apiURL,
		metricsURL: metricsURL, tokenPath: tokenPath,
		workers: c.workers, tools: tools, pools: poolNames(pools), mcp: c.mcp.tools != mcpNone,
	}
	return d, nil
}

// listenAPI opens --api-addr. Only the default address falls back to a
// free port when taken (another dev process, say); an address the user
// chose is theirs to fix.
func (c *devConfig) listenAPI(log *slog.Logger) (net.Listener, error) {
	l, err := net.Listen("tcp", c.apiAddr)
	if err == nil {
		return l, nil
	}
	if c.fs.isSet("api-addr") || !errors.Is(err, syscall.EADDRINUSE) {
		return nil, fmt.Errorf("%w: --api-addr %s: %v", errStart, c.apiAddr, err)
	}
	host, _, _ := net.SplitHostPort(c.apiAddr)
	l, err2 := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err2 != nil {
		return nil, fmt.Errorf("%w: --api-addr %s: %v", errStart, c.apiAddr, err)
	}
	log.Warn("default API address in use, picked another", "wanted", c.apiAddr, "addr", l.Addr().String())
	return l, nil
}

// startNATS runs the embedded JetStream node on loopback with its store in
// the data directory, and the users and permissions of the compose cluster
// (deploy/nats/splash.conf) with passwords, user to password, and one nkey
// user per pool: loopback is shared with every local process, so none gets
// in anonymously. The node counts and logs every permission violation of
// its clients in m.
func (c *devConfig) startNATS(log *slog.Logger, passwords map[string]string, pools []natsconf.Pool, m *metrics.NATS) (*server.Server, error) {
	users, err := natsconf.Users(passwords, pools)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errNats, err)
	}
	opts := &server.Options{}
	if err := opts.ProcessConfigString(users); err != nil {
		return nil, fmt.Errorf("%w: users and permissions: %v", errNats, err)
	}
	opts.ServerName = "splash-dev"
	opts.Host = "127.0.0.1"
	opts.Port = c.natsPort
	opts.JetStream = true
	opts.StoreDir = filepath.Join(c.dataDir, "nats")
	opts.NoSigs = true
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errNats, err)
	}
	// The node's notices (banner, JetStream limits) drown the dev banner;
	// its warnings still show.
	fatal := attachNatsLogger(srv, slog.New(minLevel{a: log.Handler(), min: slog.LevelWarn}).With("component", "nats"), violationCounter(m, pools))
	srv.Start()
	fail := func(format string, v ...any) error {
		srv.Shutdown()
		srv.WaitForShutdown()
		return fmt.Errorf("%w: "+format, append([]any{errNats}, v...)...)
	}
	select {
	case msg := <-fatal:
		return nil, fail("%s", msg)
	default:
	}
	if !srv.ReadyForConnections(30 * time.Second) {
		return nil, fail("not accepting connections")
	}
	if !srv.JetStreamEnabled() {
		return nil, fail("JetStream did not start")
	}
	return srv, nil
}

// devKey loads the data directory's key ring, generating it on first
// run. The file is created exclusively so two dev processes starting at
// once cannot end up with different keys.
func devKey(dir string) (protocol.KeyRing, string, error) {
	path := filepath.Join(dir, devKeyFile)
	ring, _, err := createKeyRing(path, 0o600)
	return ring, path, err
}

// randomToken returns a fresh API token: 128 bits, hex.
func randomToken() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("%w: api token: %v", errStart, err)
	}
	return hex.EncodeToString(b[:]), nil
}

// devBanner is what dev prints on stdout once everything listens.
type devBanner struct {
	natsURL, dataDir, keyPath, apiURL, metricsURL string
	// tokenPath holds the generated API token; empty when the token was
	// given (--api-token or SPLASH_API_TOKEN).
	tokenPath string
	workers   int
	tools     []string
	// pools names each pool with its tools.
	pools []string
	// mcp: the host serves /mcp.
	mcp bool
}

// printDevBanner says where everything is. It never prints a secret, and
// the commands it suggests take the token from the environment: a command
// line shows in every process list, an environment only to its owner.
func printDevBanner(w io.Writer, b devBanner) {
	self := "splash"
	// Under `go run` the binary lives in a build cache directory; the
	// commands to try must be ones the reader can paste.
	if exe, err := os.Executable(); err == nil && strings.Contains(exe, "go-build") {
		self = "go run ./cmd/splash"
	}
	run := fmt.Sprintf("%s run --api-url %s", self, b.apiURL)
	fmt.Fprintf(w, "splash dev is running\n")
	fmt.Fprintf(w, "  nats:    %s (users host, ops: passwords in %s; pools: nkeys in %s)\n", b.natsURL, devPasswordFile(b.dataDir, "<user>"),
		filepath.Join(b.dataDir, poolNKeysDir))
	fmt.Fprintf(w, "  data:    %s\n", b.dataDir)
	fmt.Fprintf(w, "  key:     %s\n", b.keyPath)
	fmt.Fprintf(w, "  api:     %s\n", b.apiURL)
	fmt.Fprintf(w, "  console: %s%s (sign in with the token)\n", b.apiURL, console.Prefix)
	fmt.Fprintf(w, "  metrics: %s\n", b.metricsURL)
	if b.tokenPath != "" {
		fmt.Fprintf(w, "  token:   in %s\n", b.tokenPath)
	} else {
		fmt.Fprintf(w, "  token:   (from --api-token or %s)\n", envAPIToken)
	}
	fmt.Fprintf(w, "  workers: %d per pool, serving %s\n", b.workers, strings.Join(b.tools, ", "))
	if len(b.pools) > 0 {
		fmt.Fprintf(w, "  pools:   %s (each its own NATS identity and key ring)\n", strings.Join(b.pools, "; "))
	}
	fmt.Fprintf(w, "\nTry:\n")
	if b.tokenPath != "" {
		fmt.Fprintf(w, "  export %s=\"$(cat %s)\"\n", envAPIToken, shellQuote(b.tokenPath))
	} else {
		fmt.Fprintf(w, "  export %s=...   # the token dev was given\n", envAPIToken)
	}
	switch {
	case slices.Contains(b.tools, "demo.upper"):
		fmt.Fprintf(w, "  %s -e 'await tool.start(\"demo.upper\", \"hello\")'\n", run)
		fmt.Fprintf(w, "  %s -e 'await tool.start(\"demo.stream\", \"5\")'\n", run)
	case len(b.tools) > 0:
		fmt.Fprintf(w, "  %s -e 'await tool.start(\"%s\", \"hello world\")'\n", run, b.tools[0])
	}
	if b.mcp {
		fmt.Fprintf(w, "  MCP clients: %s mcp (stdio, with the token above), or %s/mcp (streamable HTTP); docs/mcp.md\n", self, b.apiURL)
	}
	fmt.Fprintf(w, "\nPress Ctrl-C to stop.\n")
}

// shellQuote quotes s for a POSIX shell when it holds anything but
// characters that are safe bare in a path.
func shellQuote(s string) string {
	if s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+:@%", r))
	}) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// minLevel drops records below min; it quiets a chatty component without
// changing the process's log level.
type minLevel struct {
	a   slog.Handler
	min slog.Level
}

func (m minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= m.min && m.a.Enabled(ctx, l)
}
func (m minLevel) Handle(ctx context.Context, r slog.Record) error { return m.a.Handle(ctx, r) }
func (m minLevel) WithAttrs(attrs []slog.Attr) slog.Handler {
	return minLevel{a: m.a.WithAttrs(attrs), min: m.min}
}
func (m minLevel) WithGroup(name string) slog.Handler {
	return minLevel{a: m.a.WithGroup(name), min: m.min}
}

// defaultDataDir keeps dev data out of the working tree, under the user's
// cache directory, so `go run ./cmd/splash dev` on a fresh clone leaves the
// checkout clean.
func defaultDataDir() string {
	if dir, err := os.UserCacheDir(); err == nil {
		return filepath.Join(dir, "splash", "dev")
	}
	return filepath.Join(os.TempDir(), "splash-dev")
}

// poolNames describes each pool as "name: tool, tool".
func poolNames(pools []poolSecrets) []string {
	out := make([]string, len(pools))
	for i, p := range pools {
		out[i] = p.name + ": " + strings.Join(p.tools, ", ")
	}
	return out
}
