package main

import (
	"context"
	"fmt"
	"os"
)

var workerCommand = command{
	name:    "worker",
	summary: "run a worker serving tools from the invocation streams",
	help: `
Connects to NATS at --nats-url, pulls invocations of the tools in --tools,
verifies and seals frames with the key in --key-file, and runs up to
--concurrency calls at once.`,
	new: func() runner { return new(workerConfig) },
}

// workerConfig holds the flags of `splash worker`.
type workerConfig struct {
	nats        natsClientFlags
	keyFile     string
	tools       []string
	workerID    string
	concurrency int
	metricsAddr string
}

func (c *workerConfig) flags(fs *flagSet) {
	host, _ := os.Hostname()
	c.nats.register(fs)
	fs.stringVar(&c.keyFile, "key-file", envKeyFile, "", "`file` holding the frame key as 64 hex digits")
	fs.listVar(&c.tools, "tools", envTools, nil, "comma-separated `tools` to serve")
	fs.stringVar(&c.workerID, "worker-id", envWorkerID, host, "`id` of this worker in results and audit logs")
	fs.intVar(&c.concurrency, "concurrency", "SPLASH_WORKER_CONCURRENCY", 4, "`number` of calls run at once")
	fs.stringVar(&c.metricsAddr, "metrics-addr", envMetricsAddr, "127.0.0.1:9464", "`address` for /metrics (empty: off)")
}

func (c *workerConfig) run(_ context.Context, _ *app, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, args[0])
	}
	if len(c.tools) == 0 {
		return fmt.Errorf("%w: --tools is empty", errUsage)
	}
	if c.concurrency < 1 {
		return fmt.Errorf("%w: --concurrency %d, want at least 1", errUsage, c.concurrency)
	}
	return errNotYetAvailable
}
