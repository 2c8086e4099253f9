// Package host is the single-threaded capability runtime of Splash
// Fabric: the tool registry, policies, budgets, pending operations,
// deadlines, streams, retries, cancellation, reconciliation and audit log
// of one script session, plus its JavaScript engine. Package hostloop
// drives runtimes from a transport; this package does no I/O and knows no
// context, transport or clock but the one it is given.
//
// A Runtime is a pure state machine in the manner of etcd raft's RawNode.
// It starts no goroutines, takes time from a Clock and randomness from
// an io.Reader, and must be owned by one goroutine. Every method either
// applies one transition or returns a typed error and changes nothing.
//
// # Lifecycle of an external operation
//
// Register a tool whose work runs in a host-managed worker from its
// definition, the one the workers hold too (package toolspec; a catalog
// holds many, and RegisterTools registers them all):
//
//	def, err := toolspec.Spec{Name: "text.remote", Deadline: toolspec.Duration(30 * time.Second)}.Compile()
//	r := host.NewRuntime(host.Config{})
//	err = r.RegisterTool(def)
//
// A script (or a Go program, through Start) starts it; that reserves one
// tool call and one pending slot and queues the operation:
//
//	p, err := r.Start("text.remote", "release")
//
// The host claims it, in O(1), and dispatches the invocation; the
// invocation carries the stable idempotency key
// "sk1-<session nonce>-<call index>" that a worker deduplicates on:
//
//	inv, ok := r.ClaimNextExternalTool()
//
// and completes it with the worker's terminal result, which passes the
// output limit, JSON envelope and JSON Schema checks or resolves the
// promise as invalid output:
//
//	resumed, err := r.CompleteExternalTool(inv.ID, host.Ok("done"))
//
// Between claim and completion the host may retry (RetryExternalTool,
// same key, attempt+1), release progress chunks through the tool's
// redactor (PushExternalToolChunk), ask for cooperative cancellation
// (RequestExternalToolCancellation, then ConfirmExternalToolCancellation
// once the adapter acknowledges) or reconcile over an authenticated
// session (PrepareAuthenticatedExternalReconciliation,
// ReconcileAuthenticatedExternalTool). ExpireTimedOutTools, scheduled at
// NextDeadline, resolves operations whose deadline passed.
//
// Local tools have Go handlers: Call runs one synchronously, Pump runs
// started ones, checking each deadline first.
//
// After each step the host drains the audit log with DrainAudit. Every
// transition is an AuditEvent; tool inputs, outputs and chunk text are
// never kept, only their byte counts.
//
// # Scripts
//
// Promises settled by a method are handed to the script engine at the end
// of that method, once the runtime is consistent, and the script's new
// state is returned as the method's *EvalResult. Compiled scripts are
// shared by every runtime of the process (a bounded LRU), so a script
// submitted many times compiles once.
//
// A script is bounded in time and memory. Each slice of it (an Eval, or a
// resumption) runs under Config.ExecutionBudget, and its session holds at
// most Config.MemoryBudget: slices of every runtime of the process run one
// at a time, so the heap's growth during a slice is charged to its
// session, and what it keeps across awaits stays charged. Builtins that
// would make a string or array over the budget's bounds in one call throw
// a RangeError before they allocate. Over a budget the script fails with
// ErrExecutionBudget or ErrMemoryBudget; the runtime, and every other,
// go on. The timers that watch a slice are the only code of a runtime
// that runs on another goroutine, besides the slice itself for an owner
// with Turns.
//
// Slices take turns fairly. Every loop turn and function body of a script
// reaches a yield point, where a slice that ran for a quantum
// (DefaultQuantum) gives way to others that wait and goes on, its stack
// kept, when its turn comes again; turns go to the tenant (Config.Owner)
// whose slices ran least. An owner that must not wait (the host loop)
// gives the runtime Turns: a method that runs script then returns Running
// after a quantum, and the owner calls Continue when Turns says the turn
// came. SetProcessMemoryLimit stops a slice that grows the heap past the
// process's memory budget.
//
// Package hostloop keeps sessions, drives them from worker events and
// timers, and answers for them across restarts.
package host
