package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/httpapi/apitoken"
	"github.com/splashfabric/splashfabric/metrics"
	"github.com/splashfabric/splashfabric/protocol"
)

var hostCommand = command{
	name:    "host",
	summary: "run a host: the script runtime, its loop and the HTTP API",
	help: `
Connects to NATS at --nats-url, seals frames with the key in --key-file,
provisions the streams and serves the HTTP API on --api-addr, loopback by
default, with /metrics on the same listener unless --metrics-addr is given.
/readyz answers 200 once NATS is connected and the streams exist. Clients
present --api-token, which may do everything, or one of the tokens of
--api-tokens-file, each with its scopes and the tools its sessions may use
(docs/api.md); the host rereads that file when it changes. Scripts
are submitted to it with 'splash run'. Scripts may call the tools of
--catalog (default: the demo tools) and those operators publish to the
fabric with 'splash tools apply', which a running host picks up; a session
keeps the definitions it started with. Every finished session is kept in
the splash_sessions bucket, so a restarted host still answers for the
sessions an earlier process of the same --host-id held. Runs until SIGINT
or SIGTERM, then closes open event streams, records the sessions still
suspended as failed (host_stopped), stops the loop and exits 0.`,
	new: func() runner { return new(hostConfig) },
}

// hostConfig holds the flags of `splash host`.
type hostConfig struct {
	nats        natsClientFlags
	keyFile     string
	apiAddr     string
	apiToken    string
	apiTokens   string
	hostID      string
	metricsAddr string
	poolKeys    string
	catalog     string
	limits      hostLimits
	http        httpLimits
	mcp         mcpFlags
	replicas    int
	ackWait     time.Duration
}

func (c *hostConfig) flags(fs *flagSet) {
	host, _ := os.Hostname()
	c.nats.register(fs)
	fs.stringVar(&c.keyFile, "key-file", envKeyFile, "", "the host's key ring `file` (or a bare 32-byte key as 64 hex digits): ledgers, archive, leases, and the frames of pools without a ring of their own")
	fs.stringVar(&c.poolKeys, "pool-keys", envPoolKeys, "", "`directory` of the pools' key rings, <pool>.keys each (empty: every pool shares --key-file)")
	fs.stringVar(&c.apiAddr, "api-addr", envAPIAddr, defaultAPIAddr, "`address` of the HTTP API")
	fs.stringVar(&c.apiToken, "api-token", envAPIToken, "", "bearer `token` clients must present, holding every scope (prefer the variable: flags show in process lists)")
	fs.stringVar(&c.apiTokens, "api-tokens-file", envAPITokens, "", "`file` of API tokens with scopes and tools (docs/api.md), reread when it changes; instead of --api-token")
	fs.stringVar(&c.hostID, "host-id", envHostID, host, "`id` of this host in subjects and audit logs")
	fs.stringVar(&c.metricsAddr, "metrics-addr", envMetricsAddr, "", "`address` for /metrics (empty: on the API listener)")
	registerCatalog(fs, &c.catalog)
	c.limits.register(fs)
	c.http.register(fs)
	c.mcp.register(fs)
	registerReplicas(fs, &c.replicas)
	registerAckWait(fs, &c.ackWait)
}

func (c *hostConfig) run(ctx context.Context, a *app, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, args[0])
	}
	switch {
	case c.apiToken == "" && c.apiTokens == "":
		return fmt.Errorf("%w: no API token (--api-token or %s, or --api-tokens-file or %s)", errUsage, envAPIToken, envAPITokens)
	case c.apiToken != "" && c.apiTokens != "":
		// A token left in the environment would stay all-powerful beside
		// the file's scoped ones.
		return fmt.Errorf("%w: --api-token (%s) and --api-tokens-file (%s) exclude each other: put every token in the file", errUsage, envAPIToken, envAPITokens)
	}
	if err := fabric.ValidateHostID(c.hostID); err != nil {
		return fmt.Errorf("%w: --host-id: %v", errUsage, err)
	}
	cfg, err := fabricConfig(c.replicas, c.ackWait)
	if err != nil {
		return err
	}
	if err := c.limits.check(); err != nil {
		return err
	}
	if err := c.limits.applyMemoryLimit(a); err != nil {
		return err
	}
	if err := c.http.check(); err != nil {
		return err
	}
	cat, err := loadCatalog(c.catalog)
	if err != nil {
		return err
	}
	log := a.log.With("component", "host", "host_id", c.hostID)
	var tokens apitoken.Verifier
	if c.apiTokens != "" {
		f, err := openTokenFile(c.apiTokens, log)
		if err != nil {
			return err
		}
		defer f.Close()
		tokens = f
	}
	key, err := loadKeyRing(c.keyFile)
	if err != nil {
		return err
	}
	var poolKeys map[string]protocol.KeyRing
	if c.poolKeys != "" {
		if poolKeys, err = loadPoolKeys(c.poolKeys); err != nil {
			return err
		}
	}
	api, err := listen("api-addr", c.apiAddr)
	if err != nil {
		return err
	}
	defer api.Close()
	var metricsL net.Listener
	if c.metricsAddr != "" {
		if metricsL, err = listen("metrics-addr", c.metricsAddr); err != nil {
			return err
		}
		defer metricsL.Close()
	}
	tp, stopTracing, err := startTracing(ctx, "splash-host", log)
	if err != nil {
		return err
	}
	defer stopTracing()
	reg := metrics.NewRegistry()
	watch := permissionWatch(c.nats.label(), log, metrics.NewNATS(reg))
	nc, err := connectNATS(ctx, c.nats, "splash host "+c.hostID, log, watch.Option())
	if err != nil {
		return err
	}
	defer nc.Close()
	h, err := startHost(ctx, hostParts{
		nc: nc, key: key, poolKeys: poolKeys, hostID: c.hostID, fabric: cfg, apiToken: c.apiToken, apiTokens: tokens,
		api: api, metrics: metricsL, reg: reg, log: log, catalog: cat, limits: c.limits, http: c.http, mcp: c.mcp,
		tracing: tp,
	})
	if err != nil {
		return err
	}
	attrs := []any{"api_url", "http://" + api.Addr().String(), "nats_url", nc.ConnectedUrlRedacted(), "replicas", cfg.Replicas}
	if metricsL != nil {
		attrs = append(attrs, "metrics_addr", metricsL.Addr().String())
	}
	log.Info("host ready", attrs...)
	select {
	case <-ctx.Done():
		log.Info("host stopping", "reason", context.Cause(ctx))
		h.stop()
		log.Info("host stopped")
		return nil
	case err := <-h.serveErr:
		h.stop()
		return fmt.Errorf("%w: http: %v", errStart, err)
	}
}
