package workeragent

import (
	"context"
	"fmt"

	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/toolproc"
	"github.com/splashfabric/splashfabric/toolspec"
)

// HandleTool registers the tool t defines, run by h, or, when h is nil
// and the definition says how to run a process, by a supervised child
// process (see package toolproc) that the agent starts on the first call
// and stops when it stops; or, when the definition names an MCP server,
// by that server, run the same way and shared by every tool of the agent
// whose server is written alike. HandleTool is the one way to register a
// tool: whether it is idempotent or cancellable comes from the
// definition, so the agent runs the tool as the host calls it, and an
// invocation that carries another definition's digest is refused with
// ErrContractMismatch instead of run. opts may set Concurrency; a process
// tool defaults to its process's concurrency.
//
// It must be called before Run. A process runs contained
// unless its entry says contain: false; a contained tool on a machine
// where Bubblewrap cannot build its sandbox is refused here
// (toolproc.ErrContainmentUnavailable), as is one whose sandbox would
// hold what Config.Processes.Protected names (toolspec.ErrUnsafeBind).
func (a *Agent) HandleTool(t *toolspec.Tool, h Handler, opts ...ToolOption) error {
	if t == nil {
		return fmt.Errorf("%w: nil tool definition", ErrInvalidTool)
	}
	s := t.Spec()
	spec := toolSpec{concurrency: DefaultConcurrency}
	var sup *toolproc.Supervisor
	if h == nil && s.MCP != nil {
		return a.handleMCPTool(t, opts)
	}
	if h == nil {
		if s.Process == nil {
			return fmt.Errorf("%w: %q has no handler, no process and no MCP server", ErrInvalidTool, s.Name)
		}
		cfg, err := toolproc.FromSpec(t)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrInvalidTool, err)
		}
		a.processConfig(&cfg)
		if sup, err = toolproc.New(cfg); err != nil {
			return fmt.Errorf("%w: %q: %w", ErrInvalidTool, s.Name, err)
		}
		spec.concurrency = s.Process.Concurrency
		h = &processHandler{sup: sup, idempotent: s.Idempotent, cancellable: s.Cancellable}
	}
	for _, o := range opts {
		o(&spec)
	}
	spec.idempotent, spec.cancellable = s.Idempotent, s.Cancellable
	spec.digest = t.Digest()
	spec.pool = t.Pool()
	err := a.register(s.Name, h, spec, sup)
	if err != nil && sup != nil {
		_ = sup.Close(context.Background())
	}
	return err
}

// processConfig applies the worker's own settings to a tool process's
// configuration.
func (a *Agent) processConfig(cfg *toolproc.Config) {
	p := a.cfg.Processes
	// The supervisor names the tool on its own lines.
	cfg.Logger = a.log
	cfg.Observer = a.obs
	cfg.MaxRuntime = p.MaxRuntime
	cfg.Protected = p.Protected
	cfg.Cgroup = p.Cgroup
	cfg.Bwrap = p.Bwrap
}

// contractMismatch says why c, the definition an invocation was made
// under, is not the one this tool was registered with; "" when it is, or
// when the invocation names none (a host always does; a frame made by
// hand may not).
func (t *tool) contractMismatch(c *protocol.Contract) string {
	switch {
	case c == nil:
		return ""
	case c.Digest != t.spec.digest:
		return fmt.Sprintf("the host called %q under definition %s, this worker holds %s", t.name, shortDigest(c.Digest), shortDigest(t.spec.digest))
	case c.Idempotent != t.spec.idempotent:
		return fmt.Sprintf("the host declares %q idempotent=%v, this worker %v", t.name, c.Idempotent, t.spec.idempotent)
	case c.Cancellable != t.spec.cancellable:
		return fmt.Sprintf("the host declares %q cancellable=%v, this worker %v", t.name, c.Cancellable, t.spec.cancellable)
	}
	return ""
}

// shortDigest keeps a digest readable in a message: "sha256:" and 12 hex
// digits identify a definition well enough for a person.
func shortDigest(d string) string {
	const keep = len("sha256:") + 12
	if len(d) > keep {
		return d[:keep]
	}
	return d
}
