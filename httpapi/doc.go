// Package httpapi is the host's HTTP API: scripts are submitted to it, and
// their state, audit log, live chunks and operations are read from it.
//
// A host process starts its loop with a Broadcaster as observer (through
// Tee when metrics watch too), then serves New over the loop:
//
//	events := httpapi.NewBroadcaster(httpapi.BroadcasterConfig{})
//	loop, err := hostloop.StartLoop(hostloop.LoopConfig{
//		Transport: transport,
//		HostID:    "host-1",
//		Catalog:   catalog,
//		Observer:  httpapi.Tee(events, metricsObserver),
//	})
//	...
//	api := httpapi.New(loop, httpapi.Config{
//		Token:   token,        // from SPLASH_API_TOKEN or a file
//		Events:  events,
//		Ready:   fabric.Ready, // NATS connected, streams provisioned
//		Metrics: metrics.Handler(reg),
//	})
//	srv := httpapi.NewServer(api, httpapi.ServerConfig{}) // bounded connections
//	srv.RegisterOnShutdown(events.Close)                  // ends open event streams
//	err = srv.Serve(listener)
//
// Every endpoint except /healthz and /readyz requires a bearer token;
// /metrics does too unless Config.PublicMetrics is set. A host with one
// token (Config.Token) lets it do everything; a host with several
// (Config.Tokens, package apitoken: a token file reread as it changes)
// gives each its scopes (submit, read, cancel, metrics, admin), each route
// naming the one it needs, and the tool patterns its sessions may use. A
// Gate in front of the Backend admits submissions within the token's tools
// and lets each token reach its owner's sessions only, unless it is admin;
// share it with mcpserver.LoopRunner (Config.Gate) so /mcp does the same.
// With no token the API refuses every authenticated request rather than
// serving them openly.
//
// Errors are one JSON shape, {"error":{"code":"...","message":"..."}},
// with a code per sentinel of this package and of host (see
// docs/api.md for the table).
//
// The Broadcaster is called on the loop goroutine and never blocks: each
// subscriber has a bounded buffer and is dropped with a final "lagged"
// event when it falls behind. It keeps a short backlog per session, so a
// client that opens /v1/sessions/{id}/events right after submitting still
// sees the first chunks.
//
// The console (package console, served at /ui/ when Config.UI is set)
// reads what the loop does not answer for from a SessionIndex, another
// observer of the loop: the recent sessions (GET /v1/sessions), their
// sources and the workers heard from. Config.Waiting tells claimed
// operations still waiting in their stream, so that they read "queued",
// and Config.Tools answers GET /v1/tools.
//
// The handler starts no goroutines of its own. An event stream holds its
// request until the session ends, the client leaves, or the Broadcaster is
// closed; the server's read and write timeouts are lifted for it, and each
// frame must be written within Config.StreamWriteTimeout instead, so a
// client that stops reading is dropped. Streams are capped per host and per
// token, connections per server (LimitListener), and every refusal is
// reported to OnRefused with its code.
package httpapi
