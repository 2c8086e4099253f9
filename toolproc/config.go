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
	cfg := Config{Tool: s.Name, Command: append([]string(nil), p.Command...), Dir: p.Dir, Concurrency: p.Concurrency}
	for _, e := range p.Env {
		if strings.Contains(e, "=") {
			cfg.Env = append(cfg.Env, e)
		} else if v, ok := os.LookupEnv(e); ok {
			cfg.Env = append(cfg.Env, e+"="+v)
		}
	}
	if c := p.Contain; c != nil {
		cfg.Contain = &Containment{Network: c.Network}
		for _, b := range c.ROBinds {
			cfg.Contain.ROBinds = append(cfg.Contain.ROBinds, parseBind(b))
		}
		for _, b := range c.RWBinds {
			cfg.Contain.RWBinds = append(cfg.Contain.RWBinds, parseBind(b))
		}
	}
	return cfg, nil
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
	case c.StopGrace < 0 || c.RestartInitial < 0 || c.RestartMax < c.RestartInitial:
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
