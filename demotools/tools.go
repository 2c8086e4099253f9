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

// Host-side policy of the demo tools, as Catalog registers it.
const (
	// RetryAttempts is the attempt limit of demo.flaky and
	// demo.ratelimited: "2" makes flaky succeed on its last attempt, "3"
	// exhausts it.
	RetryAttempts = 3
	// SleepDeadline bounds demo.sleep, long enough for interactive demos
	// of cancellation, short enough that a forgotten call ends.
	SleepDeadline = 30 * time.Second
	// Stream limits of demo.stream: chunks, bytes per chunk, source bytes
	// and released (post-redaction) bytes.
	StreamMaxChunks        = 32
	StreamMaxChunkBytes    = 4 << 10
	StreamMaxSourceBytes   = 64 << 10
	StreamMaxReleasedBytes = 64 << 10
)

// spec is everything both sides need to know about one demo tool. The
// worker half (handler and options) and the host half (policy and
// metadata) live in one row so the two registrations cannot drift apart:
// a tool the host calls idempotent is one the worker reruns after a
// takeover.
type spec struct {
	name        string
	description string
	handler     workeragent.HandlerFunc // nil for demo.ledger, which needs a JetStream context
	idempotent  bool
	cancellable bool
	concurrency int

	maxAttempts int           // 0: one attempt
	deadline    time.Duration // 0: none
	stream      bool          // the Stream* limits and Redact
	json        bool          // JSON tool with the SumInputSchema/SumOutputSchema contract
}

// specs lists the demo tools in the order Names reports them; demo.ledger
// comes last because only Catalog and RegisterLedger know it.
var specs = []spec{
	{name: Echo, description: "answers its input", handler: echo, idempotent: true, concurrency: 16},
	{name: Upper, description: "answers its input upper-cased", handler: upper, idempotent: true, concurrency: 16},
	{
		name: Sleep, description: "waits for the duration in its input; cancellable",
		handler: sleep, idempotent: true, cancellable: true,
		// Sleepers hold a slot without using the CPU.
		concurrency: 64, deadline: SleepDeadline,
	},
	{
		name: Flaky, description: "fails transiently on the first N attempts, N from its input",
		handler: flaky, idempotent: true, concurrency: 8, maxAttempts: RetryAttempts,
	},
	{
		name: RateLimited, description: "rate-limits its first attempt for the duration in its input",
		handler: ratelimited, idempotent: true, concurrency: 8, maxAttempts: RetryAttempts,
	},
	{
		name: Stream, description: "streams N chunks, N from its input; one carries a redacted secret",
		handler: stream, idempotent: true, concurrency: 4, stream: true,
	},
	{
		name: JSONSum, description: "sums {\"numbers\": [...]} into {\"sum\": n}",
		handler: sum, idempotent: true, concurrency: 16, json: true,
	},
	{
		// Not idempotent on purpose: every run is a visible effect, so
		// the journal, not the tool, must keep it to one per key.
		name: Ledger, description: "counts its runs per idempotency key in JetStream KV",
		concurrency: 8,
	},
}

func lookup(name string) (spec, bool) {
	i := slices.IndexFunc(specs, func(s spec) bool { return s.name == name })
	if i < 0 {
		return spec{}, false
	}
	return specs[i], true
}

// options turns a spec's worker half into registration options.
func (s spec) options() []workeragent.ToolOption {
	opts := []workeragent.ToolOption{workeragent.Concurrency(s.concurrency)}
	if s.idempotent {
		opts = append(opts, workeragent.Idempotent())
	}
	if s.cancellable {
		opts = append(opts, workeragent.Cancellable())
	}
	return opts
}
