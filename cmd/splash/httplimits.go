package main

import (
	"fmt"
	"time"

	"github.com/splashfabric/splashfabric/httpapi"
)

// httpLimits are the operator's bounds on the host's HTTP connections,
// flags of both `splash host` and `splash dev`.
type httpLimits struct {
	server             httpapi.ServerConfig
	maxStreams         int
	maxStreamsPerToken int
	streamWriteTimeout time.Duration
	// traceURL is where a session's trace is looked at
	// (httpapi.Config.TraceURL).
	traceURL string
	// submitRate and submitBurst bound one token owner's submissions
	// (0: none).
	submitRate  float64
	submitBurst int
}

func (l *httpLimits) register(fs *flagSet) {
	fs.durationVar(&l.server.ReadTimeout, "http-read-timeout", "SPLASH_HTTP_READ_TIMEOUT", httpapi.DefaultReadTimeout,
		"most time to read one request, body included (`duration`); a slower one gets 408 request_timeout")
	fs.durationVar(&l.server.WriteTimeout, "http-write-timeout", "SPLASH_HTTP_WRITE_TIMEOUT", httpapi.DefaultWriteTimeout,
		"most time to answer one request (`duration`); event streams are bounded per frame instead")
	fs.durationVar(&l.server.IdleTimeout, "http-idle-timeout", "SPLASH_HTTP_IDLE_TIMEOUT", httpapi.DefaultIdleTimeout,
		"how long a keep-alive connection may wait for its next request (`duration`)")
	fs.intVar(&l.server.MaxConns, "http-max-conns", "SPLASH_HTTP_MAX_CONNS", httpapi.DefaultMaxConns,
		"`number` of HTTP connections held at once; more are answered 503 connection_limit")
	fs.intVar(&l.server.MaxConnsPerClient, "http-max-conns-per-client", "SPLASH_HTTP_MAX_CONNS_PER_CLIENT", httpapi.DefaultMaxConnsPerClient,
		"`number` of HTTP connections one client address holds at once; more are answered 429 client_connection_limit (0: no bound, for a host behind a proxy every client comes through)")
	fs.float64Var(&l.submitRate, "submit-rate", "SPLASH_SUBMIT_RATE", httpapi.DefaultSubmitRate,
		"submissions a second one token owner may make (`rate`), API and MCP together; more are refused (429 submission_rate); 0: no bound")
	fs.intVar(&l.submitBurst, "submit-burst", "SPLASH_SUBMIT_BURST", httpapi.DefaultSubmitBurst,
		"how many submissions over --submit-rate one token owner may make at once (`number`)")
	fs.intVar(&l.maxStreams, "max-streams", "SPLASH_MAX_STREAMS", httpapi.DefaultMaxStreams,
		"`number` of event streams served at once; more are refused (503 stream_limit)")
	fs.intVar(&l.maxStreamsPerToken, "max-streams-per-token", "SPLASH_MAX_STREAMS_PER_TOKEN", httpapi.DefaultMaxStreamsPerToken,
		"`number` of event streams one bearer token holds at once; more are refused (429 token_stream_limit)")
	fs.durationVar(&l.streamWriteTimeout, "stream-write-timeout", "SPLASH_STREAM_WRITE_TIMEOUT", httpapi.DefaultStreamWriteTimeout,
		"most time to write one event-stream frame (`duration`); a client that reads slower is dropped")
	fs.stringVar(&l.traceURL, "trace-url", "SPLASH_TRACE_URL", "",
		"`URL` of a session's trace in a trace viewer, {trace_id} replaced by its id (Jaeger: http://127.0.0.1:16686/trace/{trace_id}); the API and the console link to it")
}

// check refuses bounds that would not bound anything, as a usage error
// naming the flag.
func (l *httpLimits) check() error {
	for _, f := range []struct {
		name string
		v    time.Duration
	}{
		{"http-read-timeout", l.server.ReadTimeout}, {"http-write-timeout", l.server.WriteTimeout},
		{"http-idle-timeout", l.server.IdleTimeout}, {"stream-write-timeout", l.streamWriteTimeout},
	} {
		if f.v <= 0 {
			return fmt.Errorf("%w: --%s %v, want a positive duration", errUsage, f.name, f.v)
		}
	}
	for _, f := range []struct {
		name string
		v    int
	}{
		{"http-max-conns", l.server.MaxConns}, {"max-streams", l.maxStreams}, {"max-streams-per-token", l.maxStreamsPerToken},
		{"submit-burst", l.submitBurst},
	} {
		if f.v < 1 {
			return fmt.Errorf("%w: --%s %d, want at least 1", errUsage, f.name, f.v)
		}
	}
	switch {
	case l.server.MaxConnsPerClient < 0:
		return fmt.Errorf("%w: --http-max-conns-per-client %d, want 0 or more", errUsage, l.server.MaxConnsPerClient)
	case l.submitRate < 0:
		return fmt.Errorf("%w: --submit-rate %g, want 0 or more", errUsage, l.submitRate)
	}
	if l.server.MaxConnsPerClient == 0 {
		l.server.MaxConnsPerClient = -1
	}
	// Streams beyond the connections could never open, and streams that
	// take every connection leave none for the rest of the API.
	if l.maxStreams >= l.server.MaxConns {
		return fmt.Errorf("%w: --max-streams %d, want fewer than --http-max-conns %d", errUsage, l.maxStreams, l.server.MaxConns)
	}
	if l.traceURL != "" {
		if err := httpapi.CheckTraceURL(l.traceURL); err != nil {
			return fmt.Errorf("%w: --trace-url: %v", errUsage, err)
		}
	}
	if l.server.WriteTimeout <= httpapi.DefaultMaxExecutionBudget {
		return fmt.Errorf("%w: --http-write-timeout %v, want more than a script step may run (%v)", errUsage, l.server.WriteTimeout, httpapi.DefaultMaxExecutionBudget)
	}
	return nil
}

// apply sets the stream bounds of an API configuration.
func (l *httpLimits) apply(cfg *httpapi.Config) {
	cfg.MaxStreams = l.maxStreams
	cfg.MaxStreamsPerToken = l.maxStreamsPerToken
	cfg.StreamWriteTimeout = l.streamWriteTimeout
	cfg.TraceURL = l.traceURL
}

// gate is the API's gate configuration: the submission quota.
func (l *httpLimits) gate() httpapi.GateConfig {
	if l.submitRate == 0 {
		return httpapi.GateConfig{SubmitRate: -1}
	}
	return httpapi.GateConfig{SubmitRate: l.submitRate, SubmitBurst: l.submitBurst}
}
