package mcpserver

import "context"

// Runner runs script sessions for the server: the host's own loop
// (LoopRunner) or a host reached over its API (APIRunner).
type Runner interface {
	// Run submits sub for the API token ctx carries, if any
	// (apitoken.FromContext), calls chunk for each chunk the session's tools
	// release (redacted, in order, from Run's goroutine) and returns how
	// the session ended. When ctx ends first, Run asks the host to cancel
	// every live operation of the session (two-phase: the operation ends
	// when its worker acknowledges, a result wins the race or its
	// deadline passes) and returns ctx's error without waiting for that.
	Run(ctx context.Context, sub Submission, chunk func(Chunk)) (Outcome, error)
}

// Submission is a script to run as a session.
type Submission struct {
	Source string
	// Grants are the script's capabilities; nil keeps the host's
	// defaults.
	Grants []string
	// Tools are the patterns of the tools the script may call; nil
	// takes those of the caller's token (every tool without one).
	Tools []string
	// ToolCallBudget and MaxPending bound the session when positive.
	ToolCallBudget int
	MaxPending     int
}

// Chunk is one released piece of a streaming tool's output.
type Chunk struct {
	Tool  string
	Index int
	Text  string
}

// Outcome is how a session ended.
type Outcome struct {
	// Session is the session's id on the host.
	Session string
	// Failed reports a session whose script failed; Error says why.
	Failed bool
	Error  string
	// Value is the script's return value as JSON text, for a session
	// that completed; "" when it returned nothing.
	Value string
}
