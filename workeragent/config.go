package workeragent

import (
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/idempotency"
	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/toolspec"
)

// Defaults applied by New to zero Config fields.
const (
	DefaultLeaseDuration     = 30 * time.Second
	DefaultHeartbeatInterval = 5 * time.Second
	DefaultDrainGrace        = 10 * time.Second
)

// rejectLogBurst is how many lines per second each reason for refusing a
// frame may write; the counters see every one.
const rejectLogBurst = 5

// Config is how an agent joins a fabric. WorkerID, Key and Journal are
// required; zero durations take the defaults above, a zero Fabric takes
// fabric.DefaultConfig.
type Config struct {
	// WorkerID names this agent in journal leases, logs and metrics; it
	// must be unique among live agents sharing a journal.
	WorkerID string
	// Key seals and opens every frame: the key ring of the agent's pool
	// (or a single key), which the hosts hold too. Frames are sealed with
	// its current key and opened with the key they name.
	Key protocol.Keys
	// Pool names the pool the agent serves (docs/topology.md, "Pools"):
	// every tool it registers must belong to it, and the cancel records
	// it reads are that pool's. Empty: each tool belongs to the pool its
	// definition names (a tool's own name when it names none).
	Pool string
	// Fabric names the streams, consumers and buckets and their settings;
	// it must match the host's.
	Fabric fabric.Config
	// Journal deduplicates calls by idempotency key across the pool.
	Journal idempotency.Journal
	// LeaseDuration is how long a journal lease lasts without renewal; a
	// crashed agent's calls are taken over once it passes.
	LeaseDuration time.Duration
	// HeartbeatInterval is how often a running call reports progress to
	// the stream (so the ack wait does not pass) and renews its lease. It
	// must be shorter than both LeaseDuration and the consumer's ack wait.
	HeartbeatInterval time.Duration
	// DrainGrace is how long Run lets in-flight calls finish after its
	// context ends before it cancels them and hands them back.
	DrainGrace time.Duration
	// BindOnly makes Run bind to streams, the cancel bucket and the
	// tools' pool consumers that must already exist instead of creating
	// or updating them, so a pool's NATS identity needs no right to
	// change streams or consumers (a host creates the consumers of its
	// catalog's tools). Run fails with ErrNotProvisioned while they are
	// missing. The zero value keeps the provisioning that lets a worker
	// start before any host.
	BindOnly bool
	// Logger receives operational messages; nil discards them.
	Logger *slog.Logger
	// Observer is told of every handler run, dedupe hit, redelivery,
	// refused frame and process event as it happens; nil tells nobody.
	Observer Observer
	// Processes shapes every process and MCP tool the agent runs.
	Processes ProcessSettings
	// Tracer, if set, gives each invocation its spans (the call, its
	// pickup and dedupe, its handler, a process tool's call, its answer)
	// in the trace its message's headers name; nil traces nothing.
	Tracer trace.TracerProvider
}

// ProcessSettings are the worker's own settings for the tools it runs as
// child processes (see package toolproc); a catalog entry cannot change
// them.
type ProcessSettings struct {
	// MaxRuntime bounds a call that has no deadline: past it the call
	// is stopped with its process and answered indeterminate; 0 takes
	// toolproc.DefaultMaxRuntime.
	MaxRuntime time.Duration
	// Protected is what no tool's sandbox may hold: the worker's home,
	// and its secrets (key file, data directory, credentials). A catalog
	// entry whose sandbox would is refused by HandleTool.
	Protected toolspec.Protected
	// Cgroup is a cgroup v2 directory delegated to the worker for its
	// sandboxes' limits (toolproc.Config.Cgroup); empty finds one or
	// falls back to rlimits.
	Cgroup string
	// Bwrap is the Bubblewrap binary; empty looks up "bwrap" in PATH.
	Bwrap string
}

func (c Config) withDefaults() Config {
	if c.Fabric == (fabric.Config{}) {
		c.Fabric = fabric.DefaultConfig()
	}
	if c.LeaseDuration == 0 {
		c.LeaseDuration = DefaultLeaseDuration
	}
	if c.HeartbeatInterval == 0 {
		c.HeartbeatInterval = min(DefaultHeartbeatInterval, c.LeaseDuration/3)
	}
	if c.DrainGrace == 0 {
		c.DrainGrace = DefaultDrainGrace
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Observer == nil {
		c.Observer = nopObserver{}
	}
	if c.Tracer == nil {
		c.Tracer = noop.NewTracerProvider()
	}
	return c
}

func (c Config) validate() error {
	switch {
	case c.WorkerID == "":
		return fmt.Errorf("%w: empty WorkerID", ErrInvalidConfig)
	case c.Key == nil || c.Key.Ring().IsZero():
		return fmt.Errorf("%w: no session key", ErrInvalidConfig)
	case c.Pool != "" && protocol.ValidateToolName(c.Pool) != nil:
		return fmt.Errorf("%w: pool %q is not a legal name", ErrInvalidConfig, c.Pool)
	case c.Journal == nil:
		return fmt.Errorf("%w: nil Journal", ErrInvalidConfig)
	case c.LeaseDuration < 0 || c.HeartbeatInterval <= 0 || c.DrainGrace < 0 || c.Processes.MaxRuntime < 0:
		return fmt.Errorf("%w: negative duration", ErrInvalidConfig)
	case c.HeartbeatInterval >= c.LeaseDuration:
		return fmt.Errorf("%w: heartbeat %v not shorter than lease %v", ErrInvalidConfig, c.HeartbeatInterval, c.LeaseDuration)
	case c.HeartbeatInterval >= c.Fabric.AckWait:
		return fmt.Errorf("%w: heartbeat %v not shorter than ack wait %v", ErrInvalidConfig, c.HeartbeatInterval, c.Fabric.AckWait)
	}
	if err := c.Fabric.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return nil
}
