package main

import (
	"context"
	"fmt"
	"time"
)

var opsCommand = command{
	name:    "ops",
	summary: "list live operations: id, tool, state, attempt, worker, age",
	new:     func() runner { return new(opsConfig) },
}

// opsConfig holds the flags of `splash ops`.
type opsConfig struct {
	api      apiClientFlags
	watch    bool
	interval time.Duration
}

func (c *opsConfig) flags(fs *flagSet) {
	c.api.register(fs)
	fs.boolVar(&c.watch, "watch", "SPLASH_OPS_WATCH", false, "keep refreshing the list until interrupted")
	fs.durationVar(&c.interval, "interval", "SPLASH_OPS_INTERVAL", time.Second, "refresh `period` with --watch")
}

func (c *opsConfig) run(_ context.Context, _ *app, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, args[0])
	}
	if c.interval <= 0 {
		return fmt.Errorf("%w: --interval %v, want more than 0", errUsage, c.interval)
	}
	return errNotYetAvailable
}
