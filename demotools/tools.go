package demotools

import (
	"slices"
	"time"

	"github.com/splashfabric/splashfabric/workeragent"
)

// Tool names. Each is a legal tool name, so it is also a NATS subject token
// sequence.
const (
	Echo        = "demo.echo"
	Upper       = "demo.upper"
	Sleep       = "demo.sleep"
	Flaky       = "demo.flaky"
	RateLimited = "demo.ratelimited"
	Stream      = "demo.stream"
	JSONSum     = "demo.json.sum"
	Ledger      = "demo.ledger"
)

// Host-side policy of the demo tools, as catalog.yaml declares it (a test
// holds the two equal); tests and examples use these to know the bounds.
const (
	// RetryAttempts is the attempt limit of demo.flaky and
	// demo.ratelimited: "2" makes flaky succeed on its last attempt, "3"
	// exhausts it.
	RetryAttempts = 3
	// SleepDeadline bounds demo.sleep.
	SleepDeadline = 30 * time.Second
	// Stream limits of demo.stream: chunks, bytes per chunk, source bytes
	// and released (post-redaction) bytes.
	StreamMaxChunks        = 32
	StreamMaxChunkBytes    = 4 << 10
	StreamMaxSourceBytes   = 64 << 10
	StreamMaxReleasedBytes = 64 << 10
)

// builtin is the worker half of one demo tool: its Go handler and how many
// calls of it an agent runs at once. What the tool is (idempotent,
// cancellable, limits) is its definition in catalog.yaml, which host and
// worker both read, so the two halves cannot drift apart.
type builtin struct {
	name        string
	handler     workeragent.HandlerFunc // nil for demo.ledger, which needs a JetStream context
	concurrency int
}

// builtins lists the demo tools in the order Names reports them;
// demo.ledger comes last because only RegisterLedger can build it.
var builtins = []builtin{
	{name: Echo, handler: echo, concurrency: 16},
	{name: Upper, handler: upper, concurrency: 16},
	// Sleepers hold a slot without using the CPU.
	{name: Sleep, handler: sleep, concurrency: 64},
	{name: Flaky, handler: flaky, concurrency: 8},
	{name: RateLimited, handler: ratelimited, concurrency: 8},
	{name: Stream, handler: stream, concurrency: 4},
	{name: JSONSum, handler: sum, concurrency: 16},
	{name: Ledger, concurrency: 8},
}

func lookup(name string) (builtin, bool) {
	i := slices.IndexFunc(builtins, func(b builtin) bool { return b.name == name })
	if i < 0 {
		return builtin{}, false
	}
	return builtins[i], true
}
