package main

import (
	"github.com/splashfabric/splashfabric/httpapi"
	"github.com/splashfabric/splashfabric/mcpserver"
	"github.com/splashfabric/splashfabric/toolspec"
)

// mountMCP serves the host's tools at /mcp, behind the API's token, unless
// --mcp-tools is none. The tools are the catalog as it is at start: a
// tool published later reaches scripts, not the MCP tool list, until the
// host restarts.
func (h *runningHost) mountMCP(cfg *httpapi.Config, set *toolspec.Set, p hostParts) error {
	s, err := p.mcp.server(set, &mcpserver.LoopRunner{Backend: h.loop, Events: h.events}, version, p.log.With("component", "mcp"))
	if err != nil || s == nil {
		return err
	}
	cfg.MCP = s.Handler()
	h.closeMCP = s.Close
	p.log.Info("serving MCP at /mcp", "tools", s.Tools())
	return nil
}
