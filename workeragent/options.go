package workeragent

// DefaultConcurrency is how many calls of one tool an agent runs at once
// when the registration does not say.
const DefaultConcurrency = 16

// ToolOption adjusts how a tool is registered.
type ToolOption func(*toolSpec)

type toolSpec struct {
	idempotent  bool
	cancellable bool
	concurrency int
	// digest is the definition's, for a tool registered by HandleTool.
	digest string
	// pool is the pool the definition names (HandleTool); register fills
	// it in for the others.
	pool string
}

// Idempotent declares that running the tool twice under one idempotency key
// is safe. Its calls take no journal claim: they run at once and store
// their result at the end, unless a duplicate stored one first, whose
// result is then the answer; a call whose previous holder crashed is run
// again rather than reported indeterminate. Concurrent duplicates may
// both run.
func Idempotent() ToolOption { return func(s *toolSpec) { s.idempotent = true } }

// Cancellable declares that the handler honours context cancellation and
// returns CancelAcknowledged once its effect has stopped. Cancellation
// requests for other tools are answered unsupported and the call runs on.
func Cancellable() ToolOption { return func(s *toolSpec) { s.cancellable = true } }

// Concurrency bounds how many calls of the tool run at once in this agent;
// n < 1 is rejected by Handle.
func Concurrency(n int) ToolOption { return func(s *toolSpec) { s.concurrency = n } }
