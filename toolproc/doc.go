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
// With Config.Contain the process runs under Bubblewrap: read-only root,
// private /tmp, fresh /dev and /proc, every namespace unshared (no network
// unless granted), the environment cleared to Config.Env, and the chosen
// read-only and read-write binds. New checks that bwrap can start a
// sandbox here; where it cannot, the tool refuses to start
// (ErrContainmentUnavailable) rather than run uncontained.
package toolproc
