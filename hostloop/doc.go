// Package hostloop is the one goroutine of a host process that owns every
// script session's runtime (package host) and drives it from what the
// workers answer over a Transport and from its timers, in the manner of
// etcd raft's node.run: one select over transport events, commands (each
// with its reply channel) and the earliest deadline or scheduled retry.
//
//	l, err := hostloop.StartLoop(hostloop.LoopConfig{
//		Transport: tr,     // hostnats.HostTransport over NATS, or an in-memory one
//		HostID:    "h1",
//		Catalog:   func(rt *host.Runtime) error { return rt.RegisterTools(set) },
//	})
//	s, err := l.Submit(ctx, hostloop.Submission{Source: `await tool.start("demo.upper", "hi")`})
//	st, audit, err := l.Status(ctx, s.ID)
//	l.Stop()
//
// Each session's runtime belongs to its core (workflow.Session): the loop
// never calls a runtime input method itself. It hands every input to the
// core, and after each step does what the core made ready (store ledger
// appends, publish, cancel, acknowledge, remove a ledger), reporting back
// what its stores answered; the ordering rules are the core's. It claims
// everything claimable, re-arms deadlines, and tells its Observer what the
// step changed: each operation whose status changed, and each session
// whose state changed.
//
// The loop never waits for a script beyond one quantum: a session whose
// script runs longer is continued on its turns (host.Turns) between the
// loop's other steps, and what reaches it meanwhile waits until its slice
// ends. Sessions are scheduled fairly between their owners
// (Submission.Owner), each owner holds at most its share of the sessions
// (Limits.MaxSessionsPerOwner), and with a MemoryBudget the loop refuses
// new sessions near the budget (ErrMemoryPressure) and fails the one
// holding the most memory rather than let the process die.
// Host-owned retries back off (exponential with jitter; a rate-limited
// retry waits the worker's retry-after), a retry or cancellation always
// leaves a way for the operation to end, and Limits bound what one host
// takes on (429 host_busy in the API).
//
// # Sessions across restarts
//
// A Loop keeps its sessions in memory. With LoopConfig.Archive set, it
// hands each finished session's status to the archive without waiting and
// registers its incarnation at start; Loop.Status then answers a session
// the loop no longer holds from the archive, and a session of an earlier
// incarnation that left no record as failed with ErrHostRestarted (or
// ErrHostStopped after a graceful stop). Package hostnats stores the
// archive in JetStream KV.
//
// With LoopConfig.Ledger set, sessions are durable: each keeps a ledger,
// and a resumer goroutine beside the loop brings back what earlier
// processes left (with Leases, any host's whose lease lapsed), each
// session going live as soon as its replay ends (Loop.Resuming counts
// what is still to come). A live operation whose worker went silent is
// reconciled with the tool's workers after ReconcileAfter; an operator
// ends a session with CancelSession.
package hostloop
