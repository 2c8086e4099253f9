package main

import (
	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/httpapi"
	"github.com/splashfabric/splashfabric/mcpserver"
)

// mountMCP serves the host's tools at /mcp, behind the API's token, unless
// --mcp-tools is none. It follows the live catalog: a tool published to
// the fabric reaches MCP clients as it reaches scripts.
func (h *runningHost) mountMCP(cfg *httpapi.Config, live *fabric.LiveCatalog, p hostParts) error {
	s, err := p.mcp.server(live.Current(), live.Current, &mcpserver.LoopRunner{Backend: h.loop, Events: h.events}, version, p.log.With("component", "mcp"))
	if err != nil || s == nil {
		return err
	}
	cfg.MCP = s.Handler()
	h.closeMCP = s.Close
	p.log.Info("serving MCP at /mcp", "tools", s.Tools())
	return nil
}
