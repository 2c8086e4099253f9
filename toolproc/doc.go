// Package toolproc runs a tool as a long-lived child process and speaks the
// authenticated JSON-line protocol with it over stdin and stdout
// (docs/process-tools.md): several calls in flight per process, progress
// chunks, one exact cancellation per call, and a supervisor that owns the
// process's life.
//
// # The supervisor
//
// A Supervisor holds at most one process of its tool. Call writes an
// invocation to it (starting a process first if there is none) and waits
// for the call's end:
//
//	sup, _ := toolproc.New(cfg)
//	defer sup.Close(ctx)
//	out := sup.Call(ctx, toolproc.Request{Invoke: inv, Deadline: d, Chunk: send, Cancel: cancelled})
//	switch out.Kind {
//	case toolproc.Answered:           // out.Result is the tool's result frame
//	case toolproc.CancelAcknowledged: // the tool stopped the call's effect
//	case toolproc.Lost:               // the process was lost mid-call
//	case toolproc.NotStarted:         // nothing was written to any process
//	}
//
// Before it writes the invocation the supervisor arms the call's deadline;
// it disarms it before it hands over the terminal frame. When the deadline
// wins, the watchdog stops the process (TERM, then KILL after
// Config.StopGrace) and the call is Lost with Watchdog set: its effect is
// indeterminate, never a cancellation. Close (a lifecycle stop) does the
// same to every call it holds, with Stopped set.
//
// # Failing closed
//
// Every frame the process writes is checked: its tag under the per-process
// key, its role and session, its sequence (the next one, no gap, no
// replay), and what it says against the calls in flight. Anything else
// poisons the session: the process is stopped, the reason counted
// (Observer.ProcessPoisoned), and every call it held is Lost. Over-long
// lines are refused before they are buffered whole, and chunks far past
// their call's stream bounds are a flood. The next call gets a fresh
// process, started after a backoff that grows while processes keep
// failing and resets once a process answers a call.
//
// # The key and the environment
//
// Each process gets a fresh session key through an inherited pipe (fd 3,
// named by SPLASH_TOOL_KEY_FD): never argv, never the environment, never a
// log. Its environment is exactly Config.Env plus the SPLASH_TOOL_*
// variables; nothing of the worker's own environment leaks through.
//
// # MCP servers
//
// With Config.Protocol set to ProtocolMCP the process is a Model Context
// Protocol server speaking over stdio, driven by the official SDK's
// client: the supervisor performs the handshake and lists the server's
// tools when it starts one (a server that cannot, within 10 s, fails the
// start), and one process serves every tool of the supervisor
// (Request.ServerTool names the one a call wants). The same lifecycle
// applies: restart with backoff, the watchdog at a call's deadline,
// Close, Bubblewrap. Progress notifications are released as chunks in
// wire order, so every chunk a server sent before its result belongs to
// the call; tools/list_changed makes the next call list the tools again.
// A cancellation is sent as notifications/cancelled and never reported as
// acknowledged, since MCP has none: the call ends by its result, its
// deadline, or Config.CancelGrace later by the stop of the process (Lost,
// Stopped, ErrCancelUnanswered).
//
// # Containment
//
// With Config.Contain the process runs in a Bubblewrap sandbox that holds
// nothing of the worker (docs/process-tools.md, "The sandbox"): the
// system's runtime directories and a curated /etc read-only, the tool's
// own directory and program read-only, the configured binds, a private
// /tmp and /dev/shm of Limits.TmpSize, fresh /dev and /proc, every
// namespace its own (the network unless granted), the environment cleared
// to Config.Env. The tool runs as SandboxUID with no capability,
// no_new_privs and a seccomp filter, whether the worker runs as root or
// not: under a root worker bwrap starts in a user namespace the worker
// makes, and the worker's own executable, bound at /.splash/init, leaves
// root before it executes the tool (which is why every program linking
// this package answers to that name first). New refuses a sandbox that
// would hold Config.Protected (toolspec.ErrUnsafeBind) and checks that
// bwrap can build the sandbox here; where it cannot, the tool refuses to
// start (ErrContainmentUnavailable, naming the package to install) rather
// than run uncontained.
//
// # Limits
//
// A sandbox's Limits are enforced by a cgroup v2 where the worker may make
// one, else by rlimits the shim sets inside the sandbox and by the
// worker's own looks at the sandbox every 100 ms (LimitMechanism says
// which). A sandbox that reaches one is stopped: its session is poisoned
// with the limit's reason (ReasonMemoryLimit, ReasonPidsLimit,
// ReasonCPULimit, ReasonFileSizeLimit, ReasonTmpFull; errors.Is ErrLimit)
// and the next call gets a fresh process.
//
// # Cancellation and runtime
//
// A cancelled call must end within Config.CancelGrace, by its result or
// the tool's acknowledgement; past it the session is poisoned
// (ReasonCancelUnsupported or ReasonCancelUnanswered) and the call is Lost
// with Stopped set. A call without a deadline is stopped by the watchdog
// at Config.MaxRuntime (ReasonMaxRuntime).
//
// A poisoned session's error never holds what the tool wrote: a refused
// line is named by its number and size.
package toolproc
