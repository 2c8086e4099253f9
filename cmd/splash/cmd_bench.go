package main

import (
	"context"
	"fmt"
	"time"
)

var benchCommand = command{
	name:    "bench",
	summary: "submit scripts at a steady rate and report latency and throughput",
	new:     func() runner { return new(benchConfig) },
}

// benchConfig holds the flags of `splash bench`.
type benchConfig struct {
	api         apiClientFlags
	duration    time.Duration
	concurrency int
	script      string
}

func (c *benchConfig) flags(fs *flagSet) {
	c.api.register(fs)
	fs.durationVar(&c.duration, "duration", "SPLASH_BENCH_DURATION", 10*time.Second, "how long to keep submitting")
	fs.intVar(&c.concurrency, "concurrency", "SPLASH_BENCH_CONCURRENCY", 8, "`number` of scripts in flight at once")
	fs.stringVar(&c.script, "script", "SPLASH_BENCH_SCRIPT", "", "script `file` to submit (empty: a built-in echo script)")
}

func (c *benchConfig) run(_ context.Context, _ *app, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, args[0])
	}
	if c.concurrency < 1 || c.duration <= 0 {
		return fmt.Errorf("%w: --concurrency and --duration must be positive", errUsage)
	}
	return errNotYetAvailable
}
