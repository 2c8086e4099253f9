// Package splashtool is the tool side of the process-tool protocol
// (docs/process-tools.md): a tool written in Go gives Serve a Handler and
// never sees a frame.
//
// # Usage
//
//	func main() {
//		err := splashtool.Serve(func(ctx context.Context, call *splashtool.Call) (splashtool.Output, error) {
//			for _, w := range strings.Fields(call.Input.Text) {
//				_ = call.Stream(w) // progress; fails only once the session stops writing
//				if errors.Is(context.Cause(ctx), splashtool.ErrCancelled) {
//					return splashtool.Output{}, splashtool.CancelAcknowledged()
//				}
//			}
//			return splashtool.Text(strings.ToUpper(call.Input.Text)), nil
//		}, splashtool.Cancellable(true))
//		if err != nil {
//			log.Fatal(err) // the session failed closed: exit non-zero
//		}
//	}
//
// Serve reads the session key from the descriptor the worker passes
// (SPLASH_TOOL_KEY_FD), then frames from standard input until it ends.
// ServeConn does the same over any reader and writer, for tests and for
// embedding; package splashtooltest plays the worker's end.
//
// # Calls
//
// Every invoke runs its Handler on a goroutine of its own, so calls overlap
// as the host sends them. The handler answers with its return values: a nil
// error sends the Output (Text or JSON) as a success; Retryable,
// RateLimited, Permanent and Indeterminate send those failures; any other
// error is a transient failure. A panic is a transient failure too.
//
// # Cancellation
//
// With Cancellable(true), a cancel cancels the handler's context with cause
// ErrCancelled. A handler that has stopped returns CancelAcknowledged (the
// host gets "acknowledged" and no result); whatever else it returns is sent
// as its result, followed by "too_late". Without it a cancel is answered
// "unsupported" at once and the call runs on. A cancel for a call already
// answered gets "too_late". Each cancel gets exactly one disposition. The
// worker stops the process of a cancelled call that has not ended within
// its cancel grace (catalog cancel_grace, 10s by default), so a handler
// that cannot stop should finish soon.
//
// # The sandbox
//
// A worker runs a process tool in a Bubblewrap sandbox unless its catalog
// entry says contain: false: as uid 65534 with no capability, a read-only
// view of the system and of its own directory, a private /tmp, no network
// unless granted, and limits on memory, processes and files
// (docs/process-tools.md). A Go tool built with CGO_ENABLED=0 needs
// nothing of the system's libraries; its binary is bound read-only.
//
// # Failing closed
//
// A frame that does not parse, authenticate, follow the last one's
// sequence number or belong to the session stops the session: nothing more
// is written, every handler's context is cancelled, and ServeConn returns
// an error wrapping the protocol package's sentinel (protocol.ErrBadTag,
// protocol.ErrSequence, ...) once the handlers have returned. The tool
// never answers a frame it could not authenticate.
package splashtool
