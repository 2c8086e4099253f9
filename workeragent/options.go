package workeragent

// DefaultConcurrency is how many calls of one tool an agent runs at once
// when the registration does not say.
const DefaultConcurrency = 16

// ToolOption adjusts how a tool is registered.
type ToolOption func(*toolSpec)

type toolSpec struct {
	// idempotent and cancellable are the definition's declarations.
	idempotent  bool
	cancellable bool
	concurrency int
	// digest is the definition's.
	digest string
	// pool is the pool the definition names.
	pool string
}

// Concurrency bounds how many calls of the tool run at once in this agent;
// n < 1 is rejected by HandleTool.
func Concurrency(n int) ToolOption { return func(s *toolSpec) { s.concurrency = n } }
