package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

var devCommand = command{
	name:    "dev",
	summary: "run NATS, a host with its HTTP API and a worker pool in one process",
	help: `
The zero-setup default: an embedded NATS JetStream node with its data in
--data-dir, the host loop and HTTP API on --api-addr, and --workers workers
serving the demo tools. Prints where everything listens and a command to try.`,
	new: func() runner { return new(devConfig) },
}

// devConfig holds the flags of `splash dev`.
type devConfig struct {
	dataDir     string
	apiAddr     string
	apiToken    string
	metricsAddr string
	workers     int
}

func (c *devConfig) flags(fs *flagSet) {
	fs.stringVar(&c.dataDir, "data-dir", envDataDir, defaultDataDir(), "`directory` for the NATS store and the generated frame key")
	fs.stringVar(&c.apiAddr, "api-addr", envAPIAddr, defaultAPIAddr, "`address` of the host HTTP API")
	fs.stringVar(&c.apiToken, "api-token", envAPIToken, "", "bearer `token` for the host API (empty: generate one and print it)")
	fs.stringVar(&c.metricsAddr, "metrics-addr", envMetricsAddr, "", "`address` for /metrics (empty: on the API listener)")
	fs.intVar(&c.workers, "workers", "SPLASH_DEV_WORKERS", 4, "`number` of workers in the pool")
}

func (c *devConfig) run(_ context.Context, _ *app, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, args[0])
	}
	if c.workers < 1 {
		return fmt.Errorf("%w: --workers %d, want at least 1", errUsage, c.workers)
	}
	return errNotYetAvailable
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
