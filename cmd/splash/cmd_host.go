package main

import (
	"context"
	"fmt"
	"os"
)

var hostCommand = command{
	name:    "host",
	summary: "run a host: the script runtime, its loop and the HTTP API",
	help: `
Connects to NATS at --nats-url, seals frames with the key in --key-file and
serves the HTTP API on --api-addr, loopback by default. Scripts are submitted
to it with 'splash run'.`,
	new: func() runner { return new(hostConfig) },
}

// hostConfig holds the flags of `splash host`.
type hostConfig struct {
	nats        natsClientFlags
	keyFile     string
	apiAddr     string
	apiToken    string
	hostID      string
	metricsAddr string
}

func (c *hostConfig) flags(fs *flagSet) {
	host, _ := os.Hostname()
	c.nats.register(fs)
	fs.stringVar(&c.keyFile, "key-file", envKeyFile, "", "`file` holding the frame key as 64 hex digits")
	fs.stringVar(&c.apiAddr, "api-addr", envAPIAddr, defaultAPIAddr, "`address` of the HTTP API")
	fs.stringVar(&c.apiToken, "api-token", envAPIToken, "", "bearer `token` clients must present (prefer the variable: flags show in process lists)")
	fs.stringVar(&c.hostID, "host-id", envHostID, host, "`id` of this host in subjects and audit logs")
	fs.stringVar(&c.metricsAddr, "metrics-addr", envMetricsAddr, "", "`address` for /metrics (empty: on the API listener)")
}

func (c *hostConfig) run(_ context.Context, _ *app, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, args[0])
	}
	return errNotYetAvailable
}
