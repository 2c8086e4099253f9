package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/splashfabric/splashfabric/tracing"
)

// Tracing is configured by the standard OTEL_* variables alone (package
// tracing): no flag, so a deployment that traces its other services the
// same way traces this one too.

// startTracing sets up tracing for a process of role service ("splash-host",
// "splash-worker") and says in the log whether it is on. stop exports what
// is batched, bounded by shutdownTimeout.
func startTracing(ctx context.Context, service string, log *slog.Logger) (p *tracing.Provider, stop func(), err error) {
	p, err = tracing.Setup(ctx, tracing.Config{Service: service, Version: version, Logger: log})
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	if p.Enabled() {
		endpoint := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
		if endpoint == "" {
			endpoint = os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT")
		}
		log.Info("tracing on", "service", service, "endpoint", endpoint, "sampler", os.Getenv("OTEL_TRACES_SAMPLER"))
	}
	return p, func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
		defer cancel()
		if err := p.Shutdown(sctx); err != nil {
			log.Warn("tracing: last export failed", "err", err)
		}
	}, nil
}
