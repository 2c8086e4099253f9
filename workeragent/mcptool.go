package workeragent

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/splashfabric/splashfabric/toolproc"
	"github.com/splashfabric/splashfabric/toolspec"
)

// handleMCPTool registers a tool served by an MCP server (the catalog's
// mcp entry). The server runs under a supervisor like a process tool's
// (restart with backoff, watchdog, containment), shared by every tool of
// the agent whose server is written alike. Its calls stream progress as
// chunks; a cancellation becomes notifications/cancelled and is never
// acknowledged, since MCP has no acknowledgement: the call ends by its
// result, its deadline, or the stop of its process at the end of the
// cancel grace, indeterminate.
func (a *Agent) handleMCPTool(t *toolspec.Tool, opts []ToolOption) error {
	s := t.Spec()
	key, err := mcpServerKey(s.MCP)
	if err != nil {
		return fmt.Errorf("%w: %q: %w", ErrInvalidTool, s.Name, err)
	}
	a.mu.Lock()
	sup := a.mcpServers[key]
	a.mu.Unlock()
	shared := sup != nil
	if !shared {
		cfg, err := toolproc.FromMCPSpec(t)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrInvalidTool, err)
		}
		a.processConfig(&cfg)
		if sup, err = toolproc.New(cfg); err != nil {
			return fmt.Errorf("%w: %q: %w", ErrInvalidTool, s.Name, err)
		}
	}
	spec := toolSpec{concurrency: s.MCP.Concurrency}
	for _, o := range opts {
		o(&spec)
	}
	spec.idempotent, spec.cancellable = s.Idempotent, s.Cancellable
	spec.digest = t.Digest()
	spec.pool = t.Pool()
	h := &processHandler{sup: sup, idempotent: s.Idempotent, cancellable: s.Cancellable, serverTool: s.MCP.ServerTool(s.Name)}
	if err := a.register(s.Name, h, spec, sup); err != nil {
		if !shared {
			_ = sup.Close(context.Background())
		}
		return err
	}
	if !shared {
		a.mu.Lock()
		if a.mcpServers == nil {
			a.mcpServers = map[string]*toolproc.Supervisor{}
		}
		a.mcpServers[key] = sup
		a.mu.Unlock()
	}
	return nil
}

// mcpServerKey identifies how a server runs: two entries that run it
// alike share its process.
func mcpServerKey(m *toolspec.MCP) (string, error) {
	b, err := json.Marshal(struct {
		Command     []string          `json:"command"`
		Dir         string            `json:"dir"`
		Env         []string          `json:"env"`
		Contain     *toolspec.Contain `json:"contain"`
		Limits      *toolspec.Limits  `json:"limits"`
		CancelGrace toolspec.Duration `json:"cancel_grace"`
	}{m.Command, m.Dir, m.Env, m.Contain, m.Limits, m.CancelGrace})
	return string(b), err
}
