package main

import (
	"fmt"
	"log/slog"

	"github.com/splashfabric/splashfabric/mcpserver"
	"github.com/splashfabric/splashfabric/toolspec"
)

// mcpFlags choose what the fabric serves over MCP: at /mcp on a host, and
// from `splash mcp`.
type mcpFlags struct {
	tools     string
	runScript bool
}

// mcpNone turns the host's /mcp endpoint off.
const mcpNone = "none"

func (f *mcpFlags) register(fs *flagSet) {
	fs.stringVar(&f.tools, "mcp-tools", "SPLASH_MCP_TOOLS", "all", "catalog tools served over MCP: comma-separated `names`, \"all\", or \"none\" (no /mcp)")
	fs.boolVar(&f.runScript, "mcp-run-script", "SPLASH_MCP_RUN_SCRIPT", false, "serve run_script over MCP too: a whole script with the caller's grants")
}

// server builds the MCP server over set (following current, when not
// nil) and runner; nil when the flags turn MCP off. A tool the catalog
// lacks is a usage error.
func (f mcpFlags) server(set *toolspec.Set, current func() *toolspec.Set, runner mcpserver.Runner, version string, log *slog.Logger) (*mcpserver.Server, error) {
	if f.tools == mcpNone {
		return nil, nil
	}
	s, err := mcpserver.New(mcpserver.Config{
		Catalog: set, Current: current, Expose: mcpserver.ParseTools(f.tools), Runner: runner,
		RunScript: f.runScript, Version: version, Logger: log,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: --mcp-tools: %v", errUsage, err)
	}
	return s, nil
}
