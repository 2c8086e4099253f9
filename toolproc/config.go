package toolproc

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/toolspec"
)

// Defaults applied by New to zero Config fields.
const (
	DefaultStopGrace      = 2 * time.Second
	DefaultRestartInitial = 100 * time.Millisecond
	DefaultRestartMax     = 10 * time.Second
	// DefaultFloodSlack is how many chunks of one call past its stream
	// bounds (refused by Request.Chunk) are tolerated before the session
	// counts as flooded: a tool that overshoots by a little learns from
	// the bounds, one that keeps writing is stopped.
	DefaultFloodSlack = 64
	// DefaultCancelGrace is Config.CancelGrace when zero.
	DefaultCancelGrace = 10 * time.Second
)

// Protocol names what a tool process speaks on its stdin and stdout.
type Protocol string

// The protocols.
const (
	// ProtocolFrames is the authenticated JSON-line protocol of
	// docs/process-tools.md.
	ProtocolFrames Protocol = ""
	// ProtocolMCP is the Model Context Protocol over stdio: the process
	// is an MCP server, and one process serves every tool of the
	// Supervisor (Request.ServerTool names the one a call wants).
	ProtocolMCP Protocol = "mcp"
)

// Config describes how to run one process tool.
type Config struct {
	// Tool is the tool's name; it goes to the process as SPLASH_TOOL_NAME
	// and labels logs and metrics.
	Tool string
	// Command is the argv; Command[0] is a path or a name looked up in
	// PATH when the process starts.
	Command []string
	// Dir is the working directory; empty keeps the worker's.
	Dir string
	// Env is the process's whole environment besides the SPLASH_TOOL_*
	// variables, as NAME=value entries.
	Env []string
	// Concurrency bounds calls in flight in one process; 0 means 1.
	Concurrency int
	// Contain runs the process under Bubblewrap; nil runs it as is.
	Contain *Containment
	// StopGrace is how long a stopped process has between TERM and KILL.
	StopGrace time.Duration
	// MaxLineBytes bounds one line from the process; 0 means
	// protocol.DefaultMaxFrameBytes.
	MaxLineBytes int
	// RestartInitial and RestartMax shape the backoff between a lost
	// process and the next start (doubling from the first to the second).
	RestartInitial, RestartMax time.Duration
	// FloodSlack is DefaultFloodSlack when zero.
	FloodSlack int
	// Protocol is what the process speaks on stdio: ProtocolFrames (the
	// zero value) or ProtocolMCP.
	Protocol Protocol
	// CancelGrace bounds, for an MCP server, how long a cancelled call
	// may go unanswered before its process is stopped (the call then ends
	// Lost with Stopped set); 0 means DefaultCancelGrace. An MCP server
	// never acknowledges a cancellation, so this is what ends a cancelled
	// call of a tool without a deadline.
	CancelGrace time.Duration
	// Bwrap is the Bubblewrap binary; empty looks up "bwrap" in PATH.
	Bwrap string
	// Logger receives the process's stderr (bounded) and the
	// supervisor's decisions; nil discards them.
	Logger *slog.Logger
	// Observer is told of starts, restarts, poisonings, watchdog stops
	// and calls in flight; nil tells nobody.
	Observer Observer
}

// Containment is the Bubblewrap sandbox of a contained tool.
type Containment struct {
	// Network grants the host's network; without it the process has only
	// a loopback of its own.
	Network bool
	// ROBinds and RWBinds are mounted read-only and read-write.
	ROBinds, RWBinds []Bind
}

// Bind mounts Src of the worker's filesystem at Dst in the sandbox.
type Bind struct{ Src, Dst string }

// FromSpec builds the Config of a catalog entry's process: env entries
// that name a variable without a value take the worker's own value (and
// are left out when the worker has none).
func FromSpec(t *toolspec.Tool) (Config, error) {
	s := t.Spec()
	p := s.Process
	if p == nil {
		return Config{}, fmt.Errorf("%w: tool %q is not a process tool", ErrInvalidConfig, s.Name)
	}
	return fromProcess(s.Name, p.Command, p.Dir, p.Env, p.Concurrency, p.Contain), nil
}

// FromMCPSpec builds the Config of a catalog entry's MCP server, as
// FromSpec does for a process, with Protocol set to ProtocolMCP. Its
// Concurrency is MaxMCPConcurrency: one server serves several tools, and
// each tool's calls are bounded by the worker's slots for it.
func FromMCPSpec(t *toolspec.Tool) (Config, error) {
	s := t.Spec()
	m := s.MCP
	if m == nil {
		return Config{}, fmt.Errorf("%w: tool %q is not served by an MCP server", ErrInvalidConfig, s.Name)
	}
	cfg := fromProcess(s.Name, m.Command, m.Dir, m.Env, toolspec.MaxConcurrency, m.Contain)
	cfg.Protocol = ProtocolMCP
	return cfg, nil
}

func fromProcess(name string, command []string, dir string, env []string, concurrency int, contain *toolspec.Contain) Config {
	cfg := Config{Tool: name, Command: append([]string(nil), command...), Dir: dir, Concurrency: concurrency}
	for _, e := range env {
		if strings.Contains(e, "=") {
			cfg.Env = append(cfg.Env, e)
		} else if v, ok := os.LookupEnv(e); ok {
			cfg.Env = append(cfg.Env, e+"="+v)
		}
	}
	if c := contain; c != nil {
		cfg.Contain = &Containment{Network: c.Network}
		for _, b := range c.ROBinds {
			cfg.Contain.ROBinds = append(cfg.Contain.ROBinds, parseBind(b))
		}
		for _, b := range c.RWBinds {
			cfg.Contain.RWBinds = append(cfg.Contain.RWBinds, parseBind(b))
		}
	}
	return cfg
}

// parseBind reads "src" or "src:dst".
func parseBind(s string) Bind {
	if src, dst, ok := strings.Cut(s, ":"); ok {
		return Bind{Src: src, Dst: dst}
	}
	return Bind{Src: s, Dst: s}
}

func (c Config) withDefaults() Config {
	if c.Concurrency == 0 {
		c.Concurrency = 1
	}
	if c.StopGrace == 0 {
		c.StopGrace = DefaultStopGrace
	}
	if c.MaxLineBytes == 0 {
		c.MaxLineBytes = protocol.DefaultMaxFrameBytes
	}
	if c.RestartInitial == 0 {
		c.RestartInitial = DefaultRestartInitial
	}
	if c.RestartMax == 0 {
		c.RestartMax = DefaultRestartMax
	}
	if c.FloodSlack == 0 {
		c.FloodSlack = DefaultFloodSlack
	}
	if c.CancelGrace == 0 {
		c.CancelGrace = DefaultCancelGrace
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Observer == nil {
		c.Observer = nopObserver{}
	}
	return c
}

func (c Config) validate() error {
	switch {
	case protocol.ValidateToolName(c.Tool) != nil:
		return fmt.Errorf("%w: tool name %q", ErrInvalidConfig, c.Tool)
	case len(c.Command) == 0 || c.Command[0] == "":
		return fmt.Errorf("%w: tool %q: empty command", ErrInvalidConfig, c.Tool)
	case c.Concurrency < 1:
		return fmt.Errorf("%w: tool %q: concurrency %d", ErrInvalidConfig, c.Tool, c.Concurrency)
	case c.Protocol != ProtocolFrames && c.Protocol != ProtocolMCP:
		return fmt.Errorf("%w: tool %q: protocol %q", ErrInvalidConfig, c.Tool, truncate(string(c.Protocol)))
	case c.StopGrace < 0 || c.CancelGrace < 0 || c.RestartInitial < 0 || c.RestartMax < c.RestartInitial:
		return fmt.Errorf("%w: tool %q: bad durations", ErrInvalidConfig, c.Tool)
	case c.MaxLineBytes < 1 || c.FloodSlack < 1:
		return fmt.Errorf("%w: tool %q: bad bounds", ErrInvalidConfig, c.Tool)
	}
	for _, e := range c.Env {
		if name, _, ok := strings.Cut(e, "="); !ok || name == "" || strings.HasPrefix(name, envPrefix) {
			return fmt.Errorf("%w: tool %q: env entry %q", ErrInvalidConfig, c.Tool, truncate(e))
		}
	}
	if c.Contain != nil {
		for _, b := range append(append([]Bind(nil), c.Contain.ROBinds...), c.Contain.RWBinds...) {
			if !filepath.IsAbs(b.Src) || !filepath.IsAbs(b.Dst) {
				return fmt.Errorf("%w: tool %q: bind %q:%q is not absolute", ErrInvalidConfig, c.Tool, truncate(b.Src), truncate(b.Dst))
			}
		}
	}
	return nil
}

func truncate(s string) string {
	const max = 64
	if len(s) <= max {
		return s
	}
	return s[:max] + "…"
}
