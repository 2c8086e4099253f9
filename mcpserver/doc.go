// Package mcpserver serves the fabric's tools over the Model Context
// Protocol, with the official Go SDK (github.com/modelcontextprotocol/go-sdk).
//
// Each catalog tool an operator exposes becomes an MCP tool with the
// catalog's description and input schema, and its output schema for a
// JSON tool. A tools/call runs as a one-call script session, `return
// await tool.start(name, input)`, so the tool's whole policy applies
// (attempts, deadline, stream bounds, redaction, output checks):
//
//	s, err := mcpserver.New(mcpserver.Config{
//		Catalog: set,                                    // *toolspec.Set
//		Runner:  &mcpserver.LoopRunner{Backend: loop, Events: events},
//	})
//	mux.Handle("/mcp", s.Handler())                       // streamable HTTP
//	err = s.ServeStdio(ctx)                               // or stdio
//
// A Runner runs the sessions: LoopRunner on the host's own loop (the
// host's /mcp endpoint), APIRunner on a host reached over its HTTP API
// (`splash mcp`).
//
// # Tokens
//
// Over a host's /mcp every request carries the API token it was made
// with (httpapi.MCPToken reads it from the request's TokenInfo). A client
// is shown only the tools its token's sessions may use, each call's
// session may use only the tool called, and a LoopRunner with the API's
// Gate admits each session for that token as POST /v1/sessions does and
// makes it the token's on the API. Through `splash mcp` the host applies
// the token of its API client.
//
// # How calls map
//
// MCP arguments are a JSON object. A JSON tool whose input schema admits
// only objects takes the arguments as its input; any other tool (a text
// tool, a JSON tool taking arrays or numbers) takes them under "input".
// A text tool's result is one text content. A JSON tool's result is its
// JSON text, and its structured content when it is an object, or under
// "result" when the tool's output schema admits something else.
//
// Chunks become notifications/progress when the call carries a progress
// token: progress counts the chunks, message is the chunk's redacted text.
// A call the client cancels (notifications/cancelled, which the SDK turns
// into the end of the handler's context) asks the host to cancel the
// operation, two-phase: it ends when the worker acknowledges, a result
// wins the race or the deadline passes. A failed session is a result with
// isError set and the reason as text, which a model can read.
//
// # run_script
//
// With Config.RunScript, the run_script tool runs a whole script with the
// grants and tools its caller names (the host's default grants and the
// token's tools when it names none), refusing what POST /v1/sessions
// refuses with the same message.
package mcpserver
