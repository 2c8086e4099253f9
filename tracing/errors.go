package tracing

import "errors"

var (
	// ErrUnsupportedExporter: OTEL_TRACES_EXPORTER names an exporter
	// other than otlp or none.
	ErrUnsupportedExporter = errors.New("tracing: unsupported trace exporter")
	// ErrUnsupportedProtocol: the OTLP protocol asked for is not
	// http/protobuf, the one this build exports with.
	ErrUnsupportedProtocol = errors.New("tracing: unsupported OTLP protocol")
	// ErrInvalidTraceParent: a traceparent that is not a valid W3C one.
	ErrInvalidTraceParent = errors.New("tracing: invalid traceparent")
)
