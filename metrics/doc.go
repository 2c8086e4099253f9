// Package metrics holds the Prometheus collectors of Splash Fabric's host
// and worker processes and the /metrics handler that exposes them.
//
// Each process builds one registry and registers the collector sets it
// needs; a dev process that runs a host and workers together registers both
// into the same registry:
//
//	reg := metrics.NewRegistry()       // Go and process collectors included
//	host := metrics.NewHost(reg)
//	worker := metrics.NewWorker(reg, metrics.WithTools("echo", "upper"))
//	mux.Handle("/metrics", metrics.Handler(reg))
//
// Callers record events through small typed methods and never touch label
// values directly:
//
//	host.OperationStarted("echo")
//	host.OperationDispatched("echo", startedAt.Sub(publishedAt))
//	host.OperationFinished("echo", metrics.OutcomeSucceeded, time.Since(begun))
//	worker.HandlerStarted("echo")
//	worker.HandlerDone("echo", metrics.HandlerSucceeded, elapsed)
//
// Label sets are bounded on purpose. Every enumerated label (outcome, class,
// disposition, reason, state, source) accepts only the package's constants
// and records anything else as Other; the tool label accepts well-formed
// tool names up to DefaultMaxTools distinct values (or exactly the names
// given to WithTools). Operation, session and request ids never become
// labels: they belong in logs and the audit trail.
//
// Counters of a tool are created at zero the first time the tool is seen,
// and the reason and state counters at construction, so alerts built on
// increase() fire on the very first failure.
//
// This package imports no other package of the project, so host, fabric and
// workeragent can all depend on it. docs/metrics.md lists every series and
// the alerts in deploy/prometheus that use them.
package metrics
