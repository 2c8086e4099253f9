package host

import (
	"io"
	"time"
)

// Clock is the Runtime's only source of time, so deadlines are
// deterministic in tests and the Runtime never reads the wall clock itself.
type Clock interface{ Now() time.Time }

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// ManualClock is a Clock that moves only when told to. It is not safe for
// concurrent use, like the Runtime that reads it.
type ManualClock struct{ now time.Time }

// NewManualClock returns a clock stopped at t0.
func NewManualClock(t0 time.Time) *ManualClock { return &ManualClock{now: t0} }

// Now returns the clock's current time.
func (c *ManualClock) Now() time.Time { return c.now }

// Advance moves the clock forward by d.
func (c *ManualClock) Advance(d time.Duration) { c.now = c.now.Add(d) }

// Set moves the clock to t.
func (c *ManualClock) Set(t time.Time) { c.now = t }

// Defaults applied by NewRuntime and the policy constructors.
const (
	// DefaultMaxOutputBytes bounds a terminal result when the policy sets
	// no limit.
	DefaultMaxOutputBytes = 1 << 20
	// DefaultExecutionBudget bounds one slice of script execution.
	DefaultExecutionBudget = time.Second
	// DefaultMemoryBudget bounds the heap one session's script may hold.
	DefaultMemoryBudget = 256 << 20
	// DefaultAuditLimit is how many audit events are retained between
	// drains; older ones are discarded and counted (AuditDropped).
	DefaultAuditLimit = 1 << 16
	// DefaultTerminalHistory is how many finished operations Operation
	// still describes in detail.
	DefaultTerminalHistory = 1 << 10
)

// DefaultGrants are the capabilities a script sees when Config.Grants is nil.
var DefaultGrants = []string{"tool", "assert"}

// Config configures a Runtime. The zero value is usable: system clock,
// operating-system entropy, no budget, no pending limit.
type Config struct {
	// Clock supplies time; nil means the system clock.
	Clock Clock
	// Entropy is read once, by NewRuntime, for the 16-byte session nonce;
	// nil means crypto/rand.Reader.
	Entropy io.Reader
	// SessionNonce, when set, is a trusted nonce used as given; Entropy is
	// then not read. It must be unique across every runtime session that
	// shares a downstream deduplication scope, including after restarts.
	SessionNonce *CapabilitySessionNonce
	// RandomSeed, when set, seeds Math.random; nil draws it from Entropy
	// after the nonce. A durable host records it so a replay repeats the
	// first run's numbers.
	RandomSeed *RandomSeed
	// Replay lists the external calls the script made before: a replay
	// refuses a call that does not repeat them with ErrNondeterministic
	// and stops the script. Nil for a first run.
	Replay []PlannedCall
	// ToolCallBudget bounds tool calls and starts, local and external
	// together; 0 means unlimited.
	ToolCallBudget int
	// MaxPending bounds pending promises, local and external together;
	// 0 means unlimited.
	MaxPending int
	// Grants lists the capabilities visible to scripts; nil means
	// DefaultGrants.
	Grants []string
	// Tools lists the tool patterns (see ParseToolPattern) naming the
	// tools the session may call or start; nil means every tool, an
	// empty list none. A call outside them fails with ErrToolNotGranted
	// before it consumes budget. A malformed pattern grants nothing: the
	// runtime then refuses every tool, naming the pattern.
	Tools []string
	// ExecutionBudget bounds one slice of script execution; 0 means
	// DefaultExecutionBudget.
	ExecutionBudget time.Duration
	// MemoryBudget bounds, in bytes, the heap the session's script may
	// hold across all its slices; 0 means DefaultMemoryBudget. It also
	// sets the largest string (a quarter of it, in UTF-16 code units)
	// and array (a 64th, in elements) a builtin may make in one call.
	// Over it the script fails with ErrMemoryBudget.
	MemoryBudget int64
	// Owner names the tenant the session's script runs for: its slices
	// are scheduled fairly between tenants by the time they ran, and its
	// session shares a realm only with its own tenant's (see
	// DefaultQuantum). A host names the API token's owner; "" is one
	// tenant like any other.
	Owner string
	// MaxInputBytes bounds an external tool's input as it travels to a
	// worker: its length as JSON text (quotes and escapes counted at
	// their worst), so an input that fits is one the transport can carry.
	// A start over it fails with ErrInputTooLarge before it consumes
	// budget. 0 means unlimited; a host over NATS derives it from the
	// largest message its streams take (fabric.Config.MaxToolInputBytes).
	MaxInputBytes int
	// AuditLimit bounds the retained audit log; 0 means DefaultAuditLimit.
	// A host that drains after every step never reaches it.
	AuditLimit int
	// TerminalHistory bounds how many finished operations keep their
	// details for Operation; 0 means DefaultTerminalHistory. Methods on
	// any finished operation are refused with ErrWrongState regardless.
	TerminalHistory int
}
