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

	"github.com/splashfabric/splashfabric/internal/clip"
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
	// DefaultMaxRuntime is Config.MaxRuntime when zero: a call without a
	// deadline is stopped after an hour.
	DefaultMaxRuntime = time.Hour
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
	// Contain runs the process in a Bubblewrap sandbox; nil runs it as
	// the worker's own child (a catalog's contain: false).
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
	// CancelGrace bounds how long a cancelled call may run on: a call
	// that has not ended (by its result or an acknowledgement) this long
	// after its cancellation is stopped with its process, Lost with
	// Stopped set; 0 means DefaultCancelGrace. This is what ends a
	// cancelled call whose tool answers unsupported or nothing at all.
	CancelGrace time.Duration
	// MaxRuntime bounds a call that has no deadline: the watchdog stops
	// it that long after it was written (Lost, Watchdog set); 0 means
	// DefaultMaxRuntime. A worker sets one for all its tools.
	MaxRuntime time.Duration
	// Protected is what no sandbox may hold; New refuses a contained
	// tool whose directory, command or binds it covers
	// (toolspec.ErrUnsafeBind).
	Protected toolspec.Protected
	// Cgroup is a cgroup v2 directory delegated to the worker, in which
	// each contained process gets a cgroup of its own for its memory and
	// pids limits. Empty looks for one the worker may use (see
	// LimitMechanism) and falls back to rlimits.
	Cgroup string
	// Bwrap is the Bubblewrap binary; empty looks up "bwrap" in PATH.
	Bwrap string
	// Logger receives the process's stderr (bounded) and the
	// supervisor's decisions; nil discards them.
	Logger *slog.Logger
	// Observer is told of starts, restarts, poisonings, watchdog stops
	// and calls in flight; nil tells nobody.
	Observer Observer
}

// Containment is the Bubblewrap sandbox of a contained tool (see
// docs/process-tools.md, "The sandbox").
type Containment struct {
	// Network grants the host's network; without it the process has only
	// a loopback of its own.
	Network bool
	// ROBinds and RWBinds are mounted read-only and read-write, besides
	// the system's runtime directories and the tool's own directory.
	ROBinds, RWBinds []Bind
	// Limits bounds what the sandbox may use; zero fields take
	// DefaultLimits.
	Limits Limits
}

// Limits bounds a sandbox. Zero fields take DefaultLimits.
type Limits struct {
	// Memory bounds the resident memory of all the sandbox's processes,
	// in bytes.
	Memory int64
	// CPUSeconds bounds each process's CPU time over its life; 0 takes
	// the default, which is none.
	CPUSeconds int
	// Pids bounds the sandbox's processes and threads.
	Pids int
	// OpenFiles bounds each process's open files.
	OpenFiles int
	// FileSize bounds a file a process writes, in bytes.
	FileSize int64
	// TmpSize bounds the private /tmp, and /dev/shm, in bytes each.
	TmpSize int64
}

// DefaultLimits are a sandbox's limits where its catalog entry sets none.
var DefaultLimits = Limits{
	Memory:    1 << 30,
	Pids:      256,
	OpenFiles: 1024,
	FileSize:  1 << 30,
	TmpSize:   64 << 20,
}

// withDefaults fills l's zero fields from DefaultLimits.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	if l.Memory == 0 {
		l.Memory = d.Memory
	}
	if l.CPUSeconds == 0 {
		l.CPUSeconds = d.CPUSeconds
	}
	if l.Pids == 0 {
		l.Pids = d.Pids
	}
	if l.OpenFiles == 0 {
		l.OpenFiles = d.OpenFiles
	}
	if l.FileSize == 0 {
		l.FileSize = d.FileSize
	}
	if l.TmpSize == 0 {
		l.TmpSize = d.TmpSize
	}
	return l
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
	return fromProcess(s.Name, p, p.Concurrency), nil
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
	p := &toolspec.Process{Command: m.Command, Dir: m.Dir, Env: m.Env, Contain: m.Contain, Limits: m.Limits, CancelGrace: m.CancelGrace}
	cfg := fromProcess(s.Name, p, toolspec.MaxConcurrency)
	cfg.Protocol = ProtocolMCP
	return cfg, nil
}

func fromProcess(name string, p *toolspec.Process, concurrency int) Config {
	cfg := Config{Tool: name, Command: append([]string(nil), p.Command...), Dir: p.Dir, Concurrency: concurrency,
		CancelGrace: time.Duration(p.CancelGrace)}
	for _, e := range p.Env {
		if strings.Contains(e, "=") {
			cfg.Env = append(cfg.Env, e)
		} else if v, ok := os.LookupEnv(e); ok {
			cfg.Env = append(cfg.Env, e+"="+v)
		}
	}
	if !p.Contain.Enabled() {
		return cfg
	}
	cfg.Contain = &Containment{}
	if c := p.Contain; c != nil {
		cfg.Contain.Network = c.Network
		for _, b := range c.ROBinds {
			cfg.Contain.ROBinds = append(cfg.Contain.ROBinds, parseBind(b))
		}
		for _, b := range c.RWBinds {
			cfg.Contain.RWBinds = append(cfg.Contain.RWBinds, parseBind(b))
		}
	}
	if l := p.Limits; l != nil {
		cfg.Contain.Limits = Limits{Memory: int64(l.Memory), CPUSeconds: l.CPUSeconds, Pids: l.Pids,
			OpenFiles: l.OpenFiles, FileSize: int64(l.FileSize), TmpSize: int64(l.TmpSize)}
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
	if c.MaxRuntime == 0 {
		c.MaxRuntime = DefaultMaxRuntime
	}
	if c.Contain != nil {
		contain := *c.Contain
		contain.Limits = contain.Limits.withDefaults()
		c.Contain = &contain
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
		return fmt.Errorf("%w: tool %q: protocol %q", ErrInvalidConfig, c.Tool, clip.String(string(c.Protocol), clip.Echo))
	case c.StopGrace < 0 || c.CancelGrace < 0 || c.MaxRuntime < 0 || c.RestartInitial < 0 || c.RestartMax < c.RestartInitial:
		return fmt.Errorf("%w: tool %q: bad durations", ErrInvalidConfig, c.Tool)
	case c.MaxLineBytes < 1 || c.FloodSlack < 1:
		return fmt.Errorf("%w: tool %q: bad bounds", ErrInvalidConfig, c.Tool)
	}
	for _, e := range c.Env {
		if name, _, ok := strings.Cut(e, "="); !ok || name == "" || strings.HasPrefix(name, envPrefix) {
			return fmt.Errorf("%w: tool %q: env entry %q", ErrInvalidConfig, c.Tool, clip.String(e, clip.Echo))
		}
	}
	if c.Contain != nil {
		for _, b := range append(append([]Bind(nil), c.Contain.ROBinds...), c.Contain.RWBinds...) {
			if !filepath.IsAbs(b.Src) || !filepath.IsAbs(b.Dst) {
				return fmt.Errorf("%w: tool %q: bind %q:%q is not absolute", ErrInvalidConfig, c.Tool, clip.String(b.Src, clip.Echo), clip.String(b.Dst, clip.Echo))
			}
		}
		if l := c.Contain.Limits; l.Memory < toolspec.MinMemory || l.Pids < toolspec.MinPids || l.OpenFiles < toolspec.MinOpenFiles ||
			l.FileSize < toolspec.MinFileSize || l.TmpSize < toolspec.MinTmpSize || l.CPUSeconds < 0 {
			return fmt.Errorf("%w: tool %q: limits %+v below the least a sandbox runs with", ErrInvalidConfig, c.Tool, l)
		}
	}
	return nil
}

// checkProtected refuses a sandbox that would hold what cfg.Protected
// names: the tool's directory, its program, or a bind.
func (c Config) checkProtected(argv0 string) error {
	paths := []struct{ what, path string }{{"directory", c.Dir}, {"program", argv0}}
	for _, b := range append(append([]Bind(nil), c.Contain.ROBinds...), c.Contain.RWBinds...) {
		paths = append(paths, struct{ what, path string }{"bind", b.Src})
	}
	for _, p := range paths {
		if p.path == "" {
			continue
		}
		if err := c.Protected.Check(p.path); err != nil {
			return fmt.Errorf("%w: tool %q: its %s: %w", ErrInvalidConfig, c.Tool, p.what, err)
		}
	}
	return nil
}
