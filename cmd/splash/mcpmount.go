package main

import (
	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/httpapi"
	"github.com/splashfabric/splashfabric/mcpserver"
)

// mountMCP serves the host's tools at /mcp, to the API's tokens with the
// submit scope, unless --mcp-tools is none. Each call is admitted through
// the API's gate, for the caller's token. It follows the live catalog: a tool published to
// the fabric reaches MCP clients as it reaches scripts.
func (h *runningHost) mountMCP(cfg *httpapi.Config, live *fabric.LiveCatalog, p hostParts) error {
	runner := &mcpserver.LoopRunner{Backend: h.loop, Events: h.events, Gate: cfg.Gate, Tracer: cfg.Tracer}
	s, err := p.mcp.server(live.Current(), live.Current, runner, version, p.log.With("component", "mcp"))
	if err != nil || s == nil {
		return err
	}
	cfg.MCP = s.Handler()
	h.closeMCP = s.Close
	p.log.Info("serving MCP at /mcp", "tools", s.Tools())
	return nil
}
