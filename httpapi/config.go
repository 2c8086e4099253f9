package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/splashfabric/splashfabric/httpapi/apitoken"
)

// DefaultAddr is where a host serves the API unless told otherwise: the
// loopback interface, so a fresh install is not reachable from the network.
const DefaultAddr = "127.0.0.1:8080"

// Defaults for the zero values of Config.
const (
	// DefaultMaxBodyBytes bounds every request body.
	DefaultMaxBodyBytes = 1 << 20
	// DefaultMaxSourceBytes bounds a submitted script's source. It is
	// below the body limit so an oversized script gets its own error
	// instead of a generic body error.
	DefaultMaxSourceBytes = 256 << 10
	// DefaultMaxExecutionBudget caps a submission's execution_budget_ms:
	// a script slice runs on the loop goroutine, so an unbounded budget
	// would let one client stall every session of the host.
	DefaultMaxExecutionBudget = 10 * time.Second
	// DefaultMaxWait caps a submission's wait_ms. With the first step's
	// execution budget it stays under DefaultWriteTimeout, which bounds
	// the whole answer.
	DefaultMaxWait = 15 * time.Second
	// DefaultKeepAlive is how often an idle event stream gets a comment
	// line, so proxies do not close it.
	DefaultKeepAlive = 15 * time.Second
	// DefaultReadyTimeout bounds one readiness check.
	DefaultReadyTimeout = 2 * time.Second
	// DefaultMaxStreams bounds the event streams a host serves at once:
	// each holds a connection, a goroutine and a subscriber buffer for as
	// long as its session runs.
	DefaultMaxStreams = 256
	// DefaultMaxStreamsPerToken bounds the event streams one bearer token
	// holds at once, so one client cannot take every stream of the host.
	DefaultMaxStreamsPerToken = 64
	// DefaultStreamWriteTimeout bounds writing one event-stream frame: a
	// client that stops reading fills its socket's buffers, and is
	// dropped when a frame cannot be written in time.
	DefaultStreamWriteTimeout = 10 * time.Second
)

// Config configures the handler returned by New.
type Config struct {
	// Token is the one bearer token of a host that has one: it holds
	// every scope and may use every tool (it is named RootTokenName).
	// Tokens, when set, replaces it. With neither, and DisableAuth
	// false, the API fails closed: every authenticated request is
	// refused.
	Token string
	// Tokens are the bearer tokens the API accepts, each with its scopes
	// and tool patterns (an *apitoken.File follows a token file as it
	// changes). Each endpoint requires a scope (docs/api.md), each token
	// reaches only the sessions it submitted unless it is admin, and the
	// sessions it submits may use only its tools.
	Tokens apitoken.Verifier
	// DisableAuth serves every endpoint without a token, as one that
	// holds every scope (AnonymousTokenName). Only for tests and a
	// loopback-only dev process.
	DisableAuth bool
	// Gate admits submissions and keeps which token owns which session;
	// share it with mcpserver.LoopRunner so that sessions run over MCP
	// are their token's on the API too. It must front the Backend given
	// to New. Nil makes one.
	Gate *Gate
	// Ready reports readiness for /readyz (NATS connected, streams
	// provisioned). Nil means always ready.
	Ready func(ctx context.Context) error
	// Resuming, if set, reports how many durable sessions the host is
	// still bringing back from their ledgers; /readyz shows it. The host
	// is ready meanwhile: it takes new scripts as they come.
	Resuming func() int
	// ReadyTimeout bounds one Ready call; zero picks DefaultReadyTimeout.
	ReadyTimeout time.Duration
	// Events feeds /v1/sessions/{id}/events. It must be the loop's
	// observer (directly or through Tee). Nil answers that endpoint
	// with 501.
	Events *Broadcaster
	// Index, if set, answers GET /v1/sessions, GET
	// /v1/sessions/{id}/source and GET /v1/workers, and names the
	// workers of GET /v1/tools. It must be the loop's observer (through
	// Tee). Nil answers the first three with 501.
	Index *SessionIndex
	// Waiting, if set, tells which claimed operations no worker holds
	// yet, so that they read "queued" (*hostnats.HostTransport satisfies
	// it). Nil reports the runtime's states as they are.
	Waiting Waiter
	// Tools, if set, answers GET /v1/tools; nil answers it with 501.
	Tools ToolSource
	// UI, if set, is served under /ui/ without a token: the console's
	// static files, which hold nothing secret. Every call they make
	// carries the token.
	UI http.Handler
	// Metrics, if set, is served on GET /metrics.
	Metrics http.Handler
	// PublicMetrics serves /metrics without a token, for scrapers that
	// cannot send one. By default /metrics is authenticated.
	PublicMetrics bool
	// MaxBodyBytes bounds request bodies; zero picks DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// MaxSourceBytes bounds a script's source; zero picks
	// DefaultMaxSourceBytes.
	MaxSourceBytes int
	// MaxExecutionBudget caps execution_budget_ms; zero picks
	// DefaultMaxExecutionBudget.
	MaxExecutionBudget time.Duration
	// MaxWait caps wait_ms, how long a submission may hold its answer
	// for the session to end; zero picks DefaultMaxWait.
	MaxWait time.Duration
	// KeepAlive is the event-stream comment interval; zero picks
	// DefaultKeepAlive.
	KeepAlive time.Duration
	// MaxStreams bounds the event streams served at once; zero picks
	// DefaultMaxStreams. One over it is refused with 503 stream_limit.
	MaxStreams int
	// MaxStreamsPerToken bounds the event streams of one bearer token
	// (by its digest; without authentication, by whatever bearer the
	// client sends, or none); zero picks DefaultMaxStreamsPerToken. One
	// over it is refused with 429 token_stream_limit.
	MaxStreamsPerToken int
	// StreamWriteTimeout bounds writing one event-stream frame (an event,
	// a keep-alive); zero picks DefaultStreamWriteTimeout. The server's
	// read and write timeouts are lifted for a stream, this bounds it
	// instead.
	StreamWriteTimeout time.Duration
	// OnRefused, if set, is called with the code of every error response
	// (see Codes), and with CodeSlowReader for every stream dropped for a
	// client that did not keep up, so the process can count them. It
	// may run on any goroutine.
	OnRefused func(code string)
	// OnAuthFailure, if set, is called with "missing_token" or
	// "invalid_token" for every refused request, so the process can
	// count them.
	OnAuthFailure func(reason string)
	// Logger receives internal (5xx) errors; nil discards them.
	Logger *slog.Logger
	// MCP, if set, is served at /mcp to tokens with the submit scope:
	// the fabric's tools over MCP's streamable HTTP transport (package
	// mcpserver), which finds the token of each call in the call's
	// TokenInfo (see MCPToken). Its requests are exempt from the server's read and
	// write timeouts, since a call's answer streams for as long as the
	// call runs.
	MCP http.Handler
	// Series, if set, answers GET /v1/metrics/tools, the per-tool
	// series the console charts (*metrics.Series over the host's
	// registry); nil answers it with 501.
	Series SeriesSource
	// Timelines, if set, answers GET /v1/sessions/{id}/timeline. It
	// must be the loop's observer (through Tee). Nil answers it with
	// 501.
	Timelines *Timelines
	// Tracer, if set, traces each submission (POST /v1/sessions): its
	// span joins the trace the request's traceparent header names, if
	// any, and the session's spans go under it (Submission.Trace). Nil
	// traces nothing.
	Tracer trace.TracerProvider
	// TraceURL, if set, is where an operator looks at a session's trace:
	// "{trace_id}" in it is replaced by the session's trace id, and the
	// result is the session's trace_url (Jaeger's UI:
	// http://jaeger:16686/trace/{trace_id}). It must be an http or https
	// URL.
	TraceURL string
}

func (c Config) withDefaults() Config {
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if c.MaxSourceBytes <= 0 {
		c.MaxSourceBytes = DefaultMaxSourceBytes
	}
	if c.MaxExecutionBudget <= 0 {
		c.MaxExecutionBudget = DefaultMaxExecutionBudget
	}
	if c.MaxWait <= 0 {
		c.MaxWait = DefaultMaxWait
	}
	if c.KeepAlive <= 0 {
		c.KeepAlive = DefaultKeepAlive
	}
	if c.MaxStreams <= 0 {
		c.MaxStreams = DefaultMaxStreams
	}
	if c.MaxStreamsPerToken <= 0 {
		c.MaxStreamsPerToken = DefaultMaxStreamsPerToken
	}
	if c.StreamWriteTimeout <= 0 {
		c.StreamWriteTimeout = DefaultStreamWriteTimeout
	}
	if c.OnRefused == nil {
		c.OnRefused = func(string) {}
	}
	if c.ReadyTimeout <= 0 {
		c.ReadyTimeout = DefaultReadyTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}
