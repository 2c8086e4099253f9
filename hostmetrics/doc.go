// Package hostmetrics turns what a host loop reports into the host's
// Prometheus series (package metrics).
//
// An Observer is a hostloop.Observer: pass it to hostloop.LoopConfig.Observer, next
// to the HTTP API's broadcaster through httpapi.Tee, and it keeps
// metrics.Host current from the loop's audit events, released chunks,
// dispatches and session snapshots:
//
//	reg := metrics.NewRegistry()
//	obs := hostmetrics.New(metrics.NewHost(reg))
//	transport, _ := hostnats.NewHostTransport(ctx, nc, cfg, hostID, key,
//		hostnats.WithRejectHandler(obs.FrameRejected))
//	loop, _ := hostloop.StartLoop(hostloop.LoopConfig{
//		Transport: transport, HostID: hostID, Catalog: catalog,
//		Observer: httpapi.Tee(events, obs),
//	})
//	api := httpapi.New(loop, httpapi.Config{OnAuthFailure: obs.APIAuthFailure, ...})
//
// # What is counted where
//
// An operation starts when the loop claims its first attempt (the
// "claimed" audit event) and finishes with its terminal audit event; the
// time between the two is its duration. Retries come from
// "retry_scheduled" events with their class, cancellation requests from
// "cancellation_requested", stream chunks from Chunk (source and released
// bytes) and "stream_denied" events.
//
// The protocol has no "started" frame, so the first frame a worker sends
// for an attempt (a chunk or its result) stands for the worker starting
// it: the dispatch latency is the time from the attempt's publish to that
// frame, and an operation counts as pending until then and as claimed
// after. Operations waiting out a retry backoff count as pending: they are
// work the pool has yet to run.
//
// Cancellation dispositions come from the operation snapshots in
// SessionChanged (too_late, unsupported) and from "cancelled" events that
// follow a request (acknowledged). Sessions are counted active from their
// first snapshot until one reports them completed or failed.
//
// The Observer's loop methods run on the loop goroutine and keep their
// bookkeeping unlocked; FrameRejected and APIAuthFailure may be called
// from any goroutine, since they only touch the concurrency-safe metrics.
package hostmetrics
