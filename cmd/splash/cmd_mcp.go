package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/splashfabric/splashfabric/mcpserver"
)

var mcpCommand = command{
	name:    "mcp",
	summary: "serve the fabric's tools to an MCP client over stdio",
	help: `
Speaks the Model Context Protocol on stdin and stdout, for an MCP client
that starts it as a stdio server. Each tool of --catalog (default: the demo
tools) that --mcp-tools names becomes an MCP tool; each tools/call runs as a
one-call session on the host at --api-url, with the token in
SPLASH_API_TOKEN (the one 'splash dev' writes into its data directory), so
the tool's whole policy applies. Chunks become progress notifications when
the client asks for them, a cancelled request cancels the operation
(two-phase), and a failure is a result with isError. --mcp-run-script adds
run_script, which runs a whole script.

The catalog must be the host's: a tool the host does not know fails its
calls. A host serves the same tools itself at /mcp (streamable HTTP, behind
its token) for clients that speak HTTP. Logs go to stderr; stdout carries
only the protocol. Exits 0 when the client closes stdin. docs/mcp.md has a
client configuration.`,
	new: func() runner { return new(mcpConfig) },
}

// mcpConfig holds the flags of `splash mcp`.
type mcpConfig struct {
	api     apiClientFlags
	catalog string
	mcp     mcpFlags
}

func (c *mcpConfig) flags(fs *flagSet) {
	c.api.register(fs)
	registerCatalog(fs, &c.catalog)
	c.mcp.register(fs)
}

func (c *mcpConfig) run(ctx context.Context, a *app, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, args[0])
	}
	if c.mcp.tools == mcpNone {
		return fmt.Errorf("%w: --mcp-tools none leaves nothing to serve", errUsage)
	}
	cat, err := loadCatalog(c.catalog)
	if err != nil {
		return err
	}
	client, err := c.api.client()
	if err != nil {
		return err
	}
	s, err := c.mcp.server(cat.set, nil, &mcpserver.APIRunner{Client: client}, version, a.log)
	if err != nil {
		return err
	}
	a.log.Info("serving MCP on stdio", "api_url", client.BaseURL(), "tools", s.Tools())
	err = s.ServeStdio(ctx)
	if err == nil || errors.Is(err, io.EOF) || ctx.Err() != nil {
		return nil
	}
	return err
}
