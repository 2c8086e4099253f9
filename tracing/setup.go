package tracing

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/splashfabric/splashfabric/internal/clip"
)

// Config says what Setup needs beyond the environment.
type Config struct {
	// Service is the service.name spans carry when OTEL_SERVICE_NAME is
	// unset: the process's role ("splash-host", "splash-worker",
	// "splash-dev").
	Service string
	// Version, if set, is the service.version.
	Version string
	// Logger receives the exporter's failures (an unreachable endpoint);
	// nil discards them.
	Logger *slog.Logger
	// Getenv reads the environment; nil is os.Getenv. The OTLP exporter
	// reads its own variables from the process's environment.
	Getenv func(string) string
}

// Provider is a process's tracing: a TracerProvider that exports, or one
// that records nothing when tracing is off.
type Provider struct {
	sdk *sdktrace.TracerProvider
	tp  trace.TracerProvider
}

// Off returns a Provider whose tracers record nothing.
func Off() *Provider { return &Provider{tp: noop.NewTracerProvider()} }

// Enabled reports whether spans are exported.
func (p *Provider) Enabled() bool { return p != nil && p.sdk != nil }

// TracerProvider returns the provider to take tracers from.
func (p *Provider) TracerProvider() trace.TracerProvider {
	if p == nil {
		return noop.NewTracerProvider()
	}
	return p.tp
}

// Shutdown exports what is still batched and stops the exporter, bounded
// by ctx. It does nothing when tracing is off.
func (p *Provider) Shutdown(ctx context.Context) error {
	if !p.Enabled() {
		return nil
	}
	return p.sdk.Shutdown(ctx)
}

// Enabled reports whether the environment (read by getenv, nil for
// os.Getenv) turns tracing on: an OTLP endpoint is named, and neither
// OTEL_SDK_DISABLED nor OTEL_TRACES_EXPORTER=none turns it off.
func Enabled(getenv func(string) string) bool {
	if getenv == nil {
		getenv = os.Getenv
	}
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	if strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")) == "none" {
		return false
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// Setup builds the process's tracing from the OTEL_* environment (see the
// package doc). With tracing off it returns Off() and no error; a
// variable that asks for something this build cannot do is an error
// (ErrUnsupportedExporter, ErrUnsupportedProtocol), not a silent default.
func Setup(ctx context.Context, cfg Config) (*Provider, error) {
	getenv := cfg.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if err := checkEnv(getenv); err != nil {
		return nil, err
	}
	if !Enabled(getenv) {
		return Off(), nil
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("tracing: OTLP exporter: %w", err)
	}
	attrs := []resource.Option{resource.WithTelemetrySDK(), resource.WithFromEnv()}
	if cfg.Service != "" && getenv("OTEL_SERVICE_NAME") == "" {
		attrs = append(attrs, resource.WithAttributes(semconv.ServiceName(cfg.Service)))
	}
	if cfg.Version != "" {
		attrs = append(attrs, resource.WithAttributes(semconv.ServiceVersion(cfg.Version)))
	}
	res, err := resource.New(ctx, attrs...)
	if err != nil {
		return nil, fmt.Errorf("tracing: resource: %w", err)
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	// The exporter reports a failed export here, not to a caller: a
	// tracing backend that is down must cost a log line, never a call.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		logger.Warn("tracing: export failed", "err", err)
	}))
	sdk := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(res),
		sdktrace.WithIDGenerator(NewIDGenerator()),
	)
	return &Provider{sdk: sdk, tp: sdk}, nil
}

// checkEnv refuses an exporter or protocol this build does not have.
func checkEnv(getenv func(string) string) error {
	switch e := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); e {
	case "", "otlp", "none":
	default:
		return fmt.Errorf("%w: OTEL_TRACES_EXPORTER=%q (want otlp or none)", ErrUnsupportedExporter, clip.String(e, clip.Echo))
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if p := strings.TrimSpace(getenv(name)); p != "" {
			if p != "http/protobuf" {
				return fmt.Errorf("%w: %s=%q (this build exports OTLP over http/protobuf only)", ErrUnsupportedProtocol, name, clip.String(p, clip.Echo))
			}
			return nil // the traces variable, when set, decides
		}
	}
	return nil
}
